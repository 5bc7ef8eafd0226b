/**
 * Foreign tables on the source, live: a wrapper reads its remote rows in a transaction of its own,
 * not at the run's snapshot, so a run that would read one (named, as a partition of a partitioned
 * table, or through views) fails with SOURCE_FOREIGN_TABLE naming what was asked for, before any
 * file, on every path that claims a snapshot. The wrapper here has no handler: nothing can read it,
 * and nothing tries.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import { causes } from '../../src/errors';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

describe('foreign tables on the source (live)', function () {
  this.timeout(120_000);
  before(() =>
    admin().query(`
      DROP SCHEMA IF EXISTS fdt CASCADE; DROP SERVER IF EXISTS pgx_nowhere CASCADE; DROP FOREIGN DATA WRAPPER IF EXISTS pgx_dummy CASCADE;
      CREATE FOREIGN DATA WRAPPER pgx_dummy; CREATE SERVER pgx_nowhere FOREIGN DATA WRAPPER pgx_dummy;
      CREATE SCHEMA fdt;
      CREATE FOREIGN TABLE fdt.remote (id int) SERVER pgx_nowhere;
      CREATE TABLE fdt.sharded (id int) PARTITION BY RANGE (id);
      CREATE TABLE fdt.sharded_here PARTITION OF fdt.sharded FOR VALUES FROM (0) TO (100);
      CREATE FOREIGN TABLE fdt.sharded_there PARTITION OF fdt.sharded FOR VALUES FROM (100) TO (200) SERVER pgx_nowhere;
      CREATE VIEW fdt.remote_view AS SELECT * FROM fdt.remote;
      CREATE VIEW fdt.view_of_view AS SELECT id FROM fdt.remote_view;
      CREATE TABLE fdt.plain (id int PRIMARY KEY); INSERT INTO fdt.plain SELECT generate_series(1, 50)`),
  );
  after(() =>
    admin().query('DROP SCHEMA IF EXISTS fdt CASCADE; DROP SERVER IF EXISTS pgx_nowhere CASCADE; DROP FOREIGN DATA WRAPPER IF EXISTS pgx_dummy CASCADE'),
  );
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  const refused: [string, Omit<ExtractionRequest, 'source'>, RegExp][] = [
    ['a foreign table, whole', { table: 'fdt.remote', partitions: 1 }, /^fdt\.remote reads a foreign table/],
    ['a foreign table in partitions', { table: 'fdt.remote', partitions: 2 }, /^fdt\.remote reads/],
    ['a schema whose partitioned table has a foreign partition', { schema: 'fdt' }, /^fdt\.sharded reads/],
    ['a view of a view of a foreign table, in a set', { tables: ['fdt.view_of_view', 'fdt.plain'] }, /^fdt\.view_of_view reads/],
    ['a stream into a target', { table: 'fdt.sharded', target: { name: 'same', table: 'fdt.plain', via: 'stream' } }, /^fdt\.sharded reads/],
  ];
  for (const [what, request, message] of refused) {
    it(`${what}: SOURCE_FOREIGN_TABLE naming it, no file`, async () => {
      const outDir = `fdt-${Math.random().toString(36).slice(2)}`;
      const failure = await withWorker(
        async ({ taskQueue }) => {
          const handle = await startExtraction(live().temporal.client, { ...request, ...(request.target ? {} : { outDir }) }, { taskQueue });
          return handle.result().catch((err: unknown) => err);
        },
        { targets: { same: live().pg.url } },
      );
      if (request.target) {
        // A load decides the run: it ends abort, with the code as the load's reason.
        assert.deepEqual([(failure as { load?: { reason?: string } }).load?.reason], ['SOURCE_FOREIGN_TABLE'], JSON.stringify(failure));
      } else {
        assert.ok(failure instanceof WorkflowFailedError, String(failure));
        const coded = [...causes(failure)].find((e) => (e as { type?: string }).type === 'SOURCE_FOREIGN_TABLE') as Error | undefined;
        assert.ok(coded, String(failure));
        assert.match(coded.message, message);
      }
      assert.deepEqual(await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []), [], 'no file or folder');
    });
  }

  it('the rest of the schema exports once the partitioned table with a foreign partition is left out', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { schema: 'fdt', exclude: ['sharded*'] }, { taskQueue });
      const manifest = await waitForManifest(handle);
      assert.deepEqual(
        manifest.files.map((f) => [f.table, f.rows]),
        [['fdt.plain', 50]],
      );
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });
});

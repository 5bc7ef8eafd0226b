/**
 * Consistency of a table set under concurrent writers, live: parents inserted with their children
 * and amounts moved between rows of both tables while ten runs export them. Each copy must satisfy
 * the foreign key and the cross-table sum exactly, which two separate snapshots would not.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { Manifest } from '../../src/contract/extraction-types';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

/** The CSV rows of `table`'s files (header dropped), split on commas (the seeded values have none). */
async function csvRows(manifest: Manifest, table: string): Promise<string[][]> {
  const rows: string[][] = [];
  for (const f of manifest.files.filter((file) => file.table === table)) {
    const lines = (await readFile(f.path, 'utf8')).split('\n').slice(1).filter(Boolean);
    rows.push(...lines.map((l) => l.split(',')));
  }
  return rows;
}

describe('a table set under concurrent writers (live)', function () {
  this.timeout(300_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('ten runs in a row: every copy satisfies the foreign key and the cross-table sum exactly', async () => {
    await admin().query(`
      DROP SCHEMA IF EXISTS tcons CASCADE; CREATE SCHEMA tcons;
      CREATE TABLE tcons.parent (id int PRIMARY KEY, amount bigint NOT NULL);
      CREATE TABLE tcons.child (id bigserial PRIMARY KEY, parent int NOT NULL REFERENCES tcons.parent, amount bigint NOT NULL);
      INSERT INTO tcons.parent SELECT g, 1000 FROM generate_series(1, 1000) g;`);
    const TOTAL = 1000 * 1000;
    let writing = true;
    let committed = 0;
    // Each transaction keeps sum(parent) + sum(child) = TOTAL and every child's parent present.
    const writer = async (seed: number): Promise<void> => {
      const client = await admin().connect();
      try {
        for (let i = 0; writing; i++) {
          const next = 1001 + seed * 1_000_000 + i;
          await client.query('BEGIN');
          await client.query('UPDATE tcons.parent SET amount = amount - 5 WHERE id = $1', [1 + ((seed * 7 + i) % 1000)]);
          await client.query('INSERT INTO tcons.parent VALUES ($1, 0)', [next]);
          await client.query('INSERT INTO tcons.child (parent, amount) VALUES ($1, 2), ($1, 3)', [next]);
          await client.query('COMMIT');
          committed++;
        }
      } finally {
        client.release();
      }
    };
    const writers = [writer(1), writer(2)];
    try {
      await withWorker(async ({ taskQueue }) => {
        for (let run = 0; run < 10; run++) {
          const handle = await startExtraction(live().temporal.client, { schema: 'tcons' }, { taskQueue });
          const manifest = await waitForManifest(handle);
          const parents = await csvRows(manifest, 'tcons.parent');
          const children = await csvRows(manifest, 'tcons.child');
          const ids = new Set(parents.map((p) => p[0]));
          const orphans = children.filter((c) => !ids.has(c[1]));
          assert.deepEqual(orphans, [], `run ${run}: every child's parent is in the copy`);
          const sum = [...parents, ...children].reduce((s, r) => s + Number(r[r.length - 1]), 0);
          assert.equal(sum, TOTAL, `run ${run}: the cross-table sum holds`);
          await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
        }
      });
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    assert.ok(committed > 20, `the writers committed while the runs read (${committed} transactions)`);
  });
});

/**
 * Row security on the source, live: a role a policy would filter reads no rows rather than some
 * (every source session has row_security off, as pg_dump's have), so a run fails with SQLSTATE
 * 42501 naming the table before any file, on every path that reads the source; a role that
 * bypasses row security exports every row.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { admin, manifestDigest, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

/** The live source's URL as `role`. */
function as(role: string): string {
  const url = new URL(live().pg.url);
  url.username = role;
  return url.toString();
}

describe('row security on the source (live)', function () {
  this.timeout(120_000);
  before(async () => {
    await admin().query(`
      DROP SCHEMA IF EXISTS rowsec CASCADE; DROP ROLE IF EXISTS pgx_filtered; DROP ROLE IF EXISTS pgx_bypass;
      CREATE SCHEMA rowsec;
      CREATE TABLE rowsec.t (id int PRIMARY KEY, owner text);
      INSERT INTO rowsec.t SELECT g, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END FROM generate_series(1, 1000) g;
      CREATE TABLE rowsec.open (id int PRIMARY KEY);
      ALTER TABLE rowsec.t ENABLE ROW LEVEL SECURITY;
      CREATE VIEW rowsec.t_invoker WITH (security_invoker = true) AS SELECT * FROM rowsec.t;
      CREATE POLICY only_a ON rowsec.t FOR SELECT USING (owner = 'a');
      CREATE ROLE pgx_filtered LOGIN; CREATE ROLE pgx_bypass LOGIN BYPASSRLS;
      GRANT USAGE, CREATE ON SCHEMA rowsec TO pgx_filtered, pgx_bypass;
      GRANT SELECT ON ALL TABLES IN SCHEMA rowsec TO pgx_filtered, pgx_bypass;
      GRANT INSERT ON rowsec.open TO pgx_filtered;
      ANALYZE rowsec.t`);
  });
  after(() => admin().query('DROP SCHEMA rowsec CASCADE; DROP OWNED BY pgx_filtered, pgx_bypass; DROP ROLE pgx_filtered; DROP ROLE pgx_bypass'));
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  /** The run failed with `type`, its message matching `message`, somewhere down its cause chain. */
  const failedWith =
    (type: string, message: RegExp) =>
    (err: unknown): boolean => {
      const chain: { type?: string; message?: string }[] = [];
      for (let e = err as { cause?: unknown } | undefined; e; e = e.cause as typeof e) chain.push(e as (typeof chain)[number]);
      return err instanceof WorkflowFailedError && chain.some((e) => e.type === type && message.test(e.message ?? ''));
    };

  const requests: [string, Omit<ExtractionRequest, 'source'>, string, RegExp][] = [
    ['one table whole', { table: 'rowsec.t', partitions: 1 }, 'SOURCE_ROW_SECURITY', /row security applies to the source role on rowsec\.t:/],
    ['one table in partitions', { table: 'rowsec.t', partitions: 3 }, 'SOURCE_ROW_SECURITY', /on rowsec\.t:/],
    ['a schema', { schema: 'rowsec' }, 'SOURCE_ROW_SECURITY', /on rowsec\.t:/],
    // The view itself has no row security; reading it as the invoker meets the table's, and row_security off fails that read.
    [
      'a view read as its invoker',
      { tables: ['rowsec.t_invoker', 'rowsec.open'], partitionRetry: { maximumAttempts: 1 } },
      'SQLSTATE_42501',
      /row-level security policy for table "t"/,
    ],
  ];
  for (const [what, request, type, message] of requests) {
    it(`a role the policy filters: ${what} fails with ${type} naming the table, no file, no session`, async () => {
      const outDir = `rowsec-${Math.random().toString(36).slice(2)}`;
      await withWorker(
        async ({ taskQueue }) => {
          const handle = await startExtraction(live().temporal.client, { ...request, outDir }, { taskQueue });
          await assert.rejects(handle.result(), failedWith(type, message));
        },
        { sourceUrl: as('pgx_filtered') },
      );
      assert.deepEqual(await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []), [], 'no file or folder');
    });
  }

  it('a role that bypasses row security exports every row', async () => {
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, { table: 'rowsec.t', partitions: 2 }, { taskQueue });
        const manifest = await waitForManifest(handle);
        assert.deepEqual(await manifestDigest('rowsec.t', manifest), await tableDigest('SELECT * FROM rowsec.t'));
        assert.equal(
          manifest.files.reduce((sum, f) => sum + f.rows, 0),
          1000,
        );
        await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      },
      { sourceUrl: as('pgx_bypass') },
    );
  });

  it("--via internal: a filtered role's load fails with SOURCE_ROW_SECURITY, and the target table stays empty", async () => {
    const result = await withWorker(
      async ({ taskQueue }) => {
        const handle = await startExtraction(
          live().temporal.client,
          { table: 'rowsec.t', columns: ['id'], target: { name: 'same', table: 'rowsec.open', via: 'internal' } },
          { taskQueue },
        );
        return (await handle.result()) as ExtractionResult;
      },
      { sourceUrl: as('pgx_filtered'), targets: { same: as('pgx_filtered') } },
    );
    assert.deepEqual([result.terminalReceipt.outcome, result.load?.outcome, result.load?.reason], ['abort', 'failed', 'SOURCE_ROW_SECURITY']);
    assert.match(result.load?.message ?? '', /row security applies to the source role on rowsec\./);
    assert.equal((await admin().query('SELECT count(*)::int AS n FROM rowsec.open')).rows[0].n, 0);
  });
});

/**
 * `--via stream` through the workflow, with a second database as the target: every partition's
 * COPY TO flows into a COPY FROM on the target (no files), moved into the target in one fenced
 * transaction; an ambiguous COMMIT with the target unreachable ends retain_commit_unknown with the
 * source rolled back, no staging table and no session left; a target lane terminated mid-COPY fails
 * the load at once, and the retry loads the exact rows; a run cancelled while its ranges wait for
 * their lock leaves no session behind.
 */
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { DefaultLogger } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createLoadActivities } from '../../src/activities/load';
import { parseExtractionInput } from '../../src/contract/extraction-input';
import type { StreamLoadReport } from '../../src/target/loads';
import { OutputStores } from '../../src/storage/output-stores';
import { startExtraction } from '../../src/client';
import { statusQuery } from '../../src/contract/definitions';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { admin, lockAfterCoordinator, settleSessions, withMigrationGate } from '../support/database';
import { eventually } from '../support/eventually';
import { type PgProxy, pgProxy } from '../support/pg-proxy';
import { live } from '../support/services';
import { withWorker } from '../support/worker';
import {
  MIXED_TARGET_DDL,
  TARGET_DB,
  addArchiveChild,
  archiveRows,
  lastAttempt,
  loadsMixedTable,
  onTarget,
  recreateTarget,
  slowCommit,
  targetDigest,
  targetStatement,
  targetUrl,
  terminateTargetAtCommit,
} from './target-db';

const COPY_DONE = 0x63;

/**
 * Forwards to the server at `port`. The server's messages to a session opened before {@link open}
 * stop at its first CopyDone, so each COPY TO STDOUT of such a session stays mid-COPY with every row
 * sent; a session opened after passes everything.
 */
async function copyDoneGate(port: number): Promise<PgProxy & { open(): void }> {
  let holding = true;
  const proxy = await pgProxy(port, (client, upstream) => {
    const held = holding;
    client.pipe(upstream);
    client.on('close', () => upstream.destroy());
    upstream.on('end', () => client.end());
    let pending = Buffer.alloc(0);
    let stopped = false;
    upstream.on('data', (chunk: Buffer) => {
      if (stopped) return;
      pending = Buffer.concat([pending, chunk]);
      // Whole messages (a type byte, then a length that counts itself) up to a held CopyDone.
      let at = 0;
      while (pending.length - at >= 5) {
        if (held && pending[at] === COPY_DONE) {
          stopped = true;
          break;
        }
        const end = at + 1 + pending.readUInt32BE(at + 1);
        if (end > pending.length) break;
        at = end;
      }
      client.write(pending.subarray(0, at));
      pending = pending.subarray(at);
    });
  });
  return { ...proxy, open: () => void (holding = false) };
}

describe('streaming PG → PG without files (live)', function () {
  this.timeout(120_000);
  const source = loadsMixedTable('strm', 20_000);

  /** Starts a stream into dst.t; `during` runs alongside with the workflow handle. */
  const stream = (
    during: (handle: Awaited<ReturnType<typeof startExtraction>>) => Promise<void> = async () => undefined,
    extra: Record<string, unknown> = {},
  ) =>
    withWorker(
      async ({ taskQueue }) => {
        const handle = await startExtraction(
          live().temporal.client,
          { table: source.table, partitions: 3, target: { name: 'warehouse', table: 'dst.t', via: 'stream' }, ...extra },
          { taskQueue },
        );
        const [result] = await Promise.all([handle.result() as Promise<ExtractionResult>, during(handle)]);
        return result;
      },
      { targets: { warehouse: targetUrl() } },
    );

  it('streams every partition inside one exported snapshot: exact rows, no files, row evidence per partition, its rows in the status', async () => {
    let rowsShown: number | undefined;
    const result = await stream(async (handle) => {
      await handle.result();
      rowsShown = (await handle.query(statusQuery)).rows;
    });
    assert.equal(rowsShown, 20_000, 'the status counts the rows the load moved (it showed 0)');
    assert.equal(result.manifest.strategy, 'stream_copy');
    assert.deepEqual(result.manifest.files, []);
    assert.deepEqual(result.load, { outcome: 'committed', reason: null, rows: 20_000 });
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.deepEqual(result.terminalReceipt.filesRetained, [], 'nothing retained: there are no files');
    assert.deepEqual(await targetDigest(), source.expected);
    const r = result.extractionReceipt!;
    assert.equal(r.snapshotAuthority, 'postgresql.exported_snapshot');
    assert.match(r.sourceToken!, /^sha256:[0-9a-f]{64}$/);
    assert.ok(r.extractionCompletedAt);
    assert.match(result.manifest.snapshotDigest!, /^sha256:[0-9a-f]{64}$/);
    assert.equal(r.evidence.length, 3, 'one entry per partition');
    assert.equal(
      r.evidence.reduce((n, e) => n + e.rows, 0),
      20_000,
    );
    assert.ok(
      r.evidence.every((e) => e.bytes === null && e.sha256 === null && e.name.startsWith(`${source.table}/part-`)),
      'rows only: nothing stored to check bytes against',
    );
  });

  it('a stream its fence answers (an earlier try committed) claims no snapshot: no receipt, no snapshot digest, the rows the fence recorded', async () => {
    const loadStream = createLoadActivities({
      targetUrl: () => targetUrl(),
      sourceUrl: () => live().pg.url,
      stores: new OutputStores({ outputRoot: live().outRoot, fileMode: 0o600 }),
    }).loadStream;
    const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
    const raw = {
      input: parseExtractionInput({ table: source.table, partitions: 2, target: { name: 'warehouse', table: 'dst.t', via: 'stream' } }),
      operationId: 'op-stream-twice',
    };
    const first: StreamLoadReport = await env.run(loadStream, raw);
    assert.equal(first.report.outcome, 'committed');
    assert.match(first.snapshotDigest ?? '', /^sha256:/);
    // The try's report was lost, and a retry streams again over a snapshot of its own: the fence answers its move.
    const again: StreamLoadReport = await env.run(loadStream, raw);
    assert.deepEqual(
      { report: again.report, receipt: again.receipt, snapshotDigest: again.snapshotDigest },
      { report: { outcome: 'committed', operationId: 'op-stream-twice', reason: null, rows: 20_000 }, receipt: null, snapshotDigest: null },
    );
    assert.deepEqual(await targetDigest(), source.expected, 'loaded once');
  });

  it("holds the source's snapshot transaction open until the target's COMMIT has landed", async () => {
    await slowCommit(2);
    const coordinator = `SELECT state FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator'`;
    const result = await stream(async () => {
      await targetStatement('COMMIT');
      const during = await admin().query(coordinator);
      assert.equal(during.rows.length, 1, 'the coordinator session is open while the target commits');
      assert.match(during.rows[0].state, /^(idle in transaction|active)$/, 'inside its transaction');
    });
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.deepEqual(await targetDigest(), source.expected);
  });

  it('opens no target transaction while the ranges stream: the fence is claimed at the move', async () => {
    // A domain check that sleeps on one row keeps that range's COPY into staging running for a second.
    await recreateTarget(
      `CREATE FUNCTION public.slow_row(v bigint) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN IF v = 1 THEN PERFORM pg_sleep(1); END IF; RETURN true; END $$;
       CREATE DOMAIN public.slow_id AS bigint CHECK (public.slow_row(VALUE));
       ${MIXED_TARGET_DDL.replace('id bigint', 'id public.slow_id')}`,
    );
    const result = await stream(async () => {
      const copying = await targetStatement('COPY');
      // A transaction id held idle on the target holds back its vacuum horizon for the stream's length.
      const held = await admin().query(
        `SELECT pid, query FROM pg_stat_activity WHERE datname = $1 AND application_name = 'pg-extract/target' AND pid <> $2 AND backend_xid IS NOT NULL AND state LIKE 'idle in transaction%'`,
        [TARGET_DB, copying],
      );
      assert.deepEqual(held.rows, [], 'no target session holds a transaction id while a range streams');
    });
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.deepEqual(await targetDigest(), source.expected);
  });

  it('a target lane terminated mid-COPY fails the load at once, its source session still mid-COPY; the retry loads the exact rows', async () => {
    // Every range of the first attempt is held before its CopyDone, so its source session is
    // mid-COPY when a target lane dies: the failed lane must close it, for ROLLBACK cannot run there.
    const gate = await copyDoneGate(Number(new URL(live().pg.url).port));
    const sourceUrl = new URL(live().pg.url);
    sourceUrl.hostname = '127.0.0.1';
    sourceUrl.port = String(gate.port);
    const { result, attempt } = await withWorker(
      async ({ taskQueue }) => {
        try {
          const handle = await startExtraction(
            live().temporal.client,
            { table: source.table, partitions: 3, target: { name: 'warehouse', table: 'dst.t', via: 'stream' } },
            { taskQueue },
          );
          await admin().query('SELECT pg_terminate_backend($1)', [await targetStatement('COPY')]);
          gate.open();
          let late: NodeJS.Timeout | undefined;
          const deadline = new Promise<never>((_, reject) => {
            late = setTimeout(() => reject(new Error('the load neither failed nor retried within 20 s of the lane ending')), 20_000);
          });
          try {
            const result = (await Promise.race([handle.result(), deadline])) as ExtractionResult;
            return { result, attempt: await lastAttempt(handle, 'loadStream') };
          } finally {
            clearTimeout(late);
          }
        } finally {
          // Cuts a hung attempt's source sessions too, so the worker can stop.
          await gate.close();
        }
      },
      { sourceUrl: sourceUrl.toString(), targets: { warehouse: targetUrl() } },
    );
    assert.equal(attempt, 2, 'the terminated lane failed the first attempt, and the second loaded');
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.deepEqual(result.load, { outcome: 'committed', reason: null, rows: 20_000 });
    assert.deepEqual(await targetDigest(), source.expected);
  });

  it("replace empties the target in the same transaction, and leaves an inheritance child's rows", async () => {
    await onTarget((c) => c.query(`INSERT INTO dst.t (id, name) VALUES (-1, 'old')`));
    await addArchiveChild();
    const result = await stream(undefined, { target: { name: 'warehouse', table: 'dst.t', via: 'stream', mode: 'replace' } });
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.deepEqual(await targetDigest(), source.expected);
    assert.deepEqual(await archiveRows(), [{ id: -2, name: 'archived' }]);
  });

  it('an ambiguous COMMIT with the target unreachable → retain_commit_unknown; the source rolled back, nothing left', async () => {
    await slowCommit();
    // Connections come back once the run decided, so its last cleanup can drop the staging tables the load could not.
    const result = await stream(async (handle) => {
      await terminateTargetAtCommit(async () => void (await admin().query(`ALTER DATABASE ${TARGET_DB} ALLOW_CONNECTIONS false`)));
      while (!['cleaning_up', 'done'].includes((await handle.query(statusQuery)).phase)) await new Promise((r) => setTimeout(r, 50));
      await admin().query(`ALTER DATABASE ${TARGET_DB} ALLOW_CONNECTIONS true`);
    });
    assert.deepEqual(result.load, {
      outcome: 'unknown',
      reason: 'TARGET_COMMIT_AMBIGUOUS',
      rows: null,
      message: 'the COMMIT was sent but its acknowledgement was lost; the target could not say whether it committed',
    });
    assert.equal(result.terminalReceipt.outcome, 'retain_commit_unknown');
    assert.equal(
      result.extractionReceipt!.evidence.reduce((n, e) => n + e.rows, 0),
      20_000,
      'what was read is receipted',
    );
    assert.equal((await targetDigest()).count, 0, 'the terminated COMMIT did not land');
    const open = await admin().query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'pg-extract/%' AND state LIKE 'idle in transaction%'`,
    );
    assert.equal(open.rows[0].n, 0, 'no source transaction left open');
  });

  it('a run cancelled while its ranges wait for their table lock (ACCESS EXCLUSIVE asked for after the coordinator locked) leaves no session of ours once it has ended', async () => {
    await withMigrationGate(async ({ sourceUrl, migration, open }) => {
      await withWorker(
        async ({ taskQueue }) => {
          const handle = await startExtraction(
            live().temporal.client,
            {
              table: source.table,
              partitions: 2,
              target: { name: 'warehouse', table: 'dst.t', via: 'stream' },
              timeouts: { lockTimeoutMs: 60_000, loadHeartbeatMs: 2000 },
            },
            { taskQueue },
          );
          // A migration: it waits for the coordinator, and every range's ACCESS SHARE then waits behind it.
          const { locked } = await lockAfterCoordinator(migration, source.table);
          open();
          const waiting = async (): Promise<boolean> =>
            (await admin().query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'pg-extract/stream' AND wait_event_type = 'Lock'`)).rowCount === 2;
          await eventually(waiting, 'both ranges wait behind the migration');
          await handle.cancel();
          await assert.rejects(handle.result(), WorkflowFailedError);
          // Each range's session was closed, its backend left queued until the server noticed the closed socket (up to 5 s).
          const left = await settleSessions(1000);
          await migration.query('ROLLBACK');
          await locked;
          assert.deepEqual(left, [], 'no session of ours is left once the run has ended');
        },
        { sourceUrl, targets: { warehouse: targetUrl() } },
      );
    });
  });
});

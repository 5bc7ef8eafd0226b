/**
 * Every loaded run ends with one terminal receipt. Definite load failures (a value the target
 * column rejects, a row a CHECK refuses, an unconfigured target) abort with a coded reason on
 * the first attempt; a loader worker killed mid-load is noticed within its heartbeat timeout and
 * the load is retried on another worker; a run cancelled mid-load cancels the target statement,
 * leaves the target untouched and aborts once that transaction has ended.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { access } from 'node:fs/promises';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { statusQuery, terminalReceiptQuery } from '../../src/contract/definitions';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult, Manifest } from '../../src/contract/extraction-types';
import { type RowsDigest, admin, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';
import { type WorkerProcess, spawnWorker } from '../support/worker-process';
import { TARGET_DB, lastAttempt, onTarget, orphanStagingTables, recreateTarget, targetDigest, targetStatement, targetUrl } from './target-db';

const COLUMNS = 'amount numeric(12,2), created timestamptz, flag boolean, doc jsonb';
/** A target whose `name` column checks each value slowly (~2 ms: 6 s for the table's COPY), so a test can act while the load runs. */
const SLOW_TARGET = `CREATE SCHEMA dst;
  CREATE FUNCTION dst.slow_ok(text) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.002); RETURN true; END $$;
  CREATE DOMAIN dst.slow_text AS text CHECK (dst.slow_ok(VALUE));
  CREATE TABLE dst.t (id bigint PRIMARY KEY, name dst.slow_text, ${COLUMNS})`;

type Handle = WorkflowHandle<(input: ExtractionRequest) => Promise<ExtractionResult>>;

async function targetState(): Promise<{ rows: number; fenced: number; staging: number }> {
  return onTarget(async (c) => {
    const count = async (relation: string): Promise<number> => (await c.query(`SELECT count(*)::int AS n FROM ${relation}`)).rows[0].n;
    const hasFence = (await c.query(`SELECT to_regclass('pgextract.commit_fence') IS NOT NULL AS present`)).rows[0].present;
    return { rows: await count('dst.t'), fenced: hasFence ? await count('pgextract.commit_fence') : 0, staging: await orphanStagingTables() };
  });
}

async function filesGone(manifest: Manifest): Promise<void> {
  for (const f of manifest.files) await assert.rejects(access(f.path), `${f.path} was deleted`);
}

describe('a loaded run ends with one terminal receipt whatever the load does (live)', function () {
  this.timeout(120_000);
  let table: string;
  let expected: RowsDigest;
  const workers: WorkerProcess[] = [];

  before(async () => {
    table = await seedMixedTable('lf', 3000);
    expected = await tableDigest(`SELECT * FROM ${table}`);
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
  });

  const start = (taskQueue: string, target: { name: string; table: string }, extra: Partial<ExtractionRequest> = {}): Promise<Handle> =>
    startExtraction(live().temporal.client, { table, partitions: 2, target: { ...target, mode: 'append' }, ...extra }, { taskQueue });

  const definite: [string, string, { name: string; table: string }, string, RegExp][] = [
    [
      'a value the target column rejects',
      `CREATE SCHEMA dst; CREATE TABLE dst.t (id bigint, name int, ${COLUMNS})`,
      { name: 'warehouse', table: 'dst.t' },
      'SQLSTATE_22P02',
      /invalid input syntax for type integer/,
    ],
    [
      'a row the target refuses (CHECK)',
      `CREATE SCHEMA dst; CREATE TABLE dst.t (id bigint CHECK (id < 0), name text, ${COLUMNS})`,
      { name: 'warehouse', table: 'dst.t' },
      'SQLSTATE_23514',
      /violates check constraint/,
    ],
    [
      // Before, 55000 was retried: five tries read and COPYed every file again to meet the same refusal.
      'a view that takes no INSERT (no INSTEAD OF trigger, not updatable)',
      `CREATE SCHEMA dst; CREATE TABLE dst.t_rows (id bigint, name text, ${COLUMNS}); CREATE VIEW dst.t AS SELECT DISTINCT * FROM dst.t_rows`,
      { name: 'warehouse', table: 'dst.t' },
      'SQLSTATE_55000',
      /^cannot insert into view "t"$/,
    ],
    [
      'an unconfigured target name',
      `CREATE SCHEMA dst; CREATE TABLE dst.t (id bigint, name text, ${COLUMNS})`,
      { name: 'nowhere', table: 'dst.t' },
      'SOURCE_UNKNOWN',
      /nowhere/,
    ],
  ];
  for (const [what, ddl, target, reason, message] of definite) {
    it(`${what} → abort with ${reason} after one attempt, files deleted, target untouched`, async () => {
      await recreateTarget(ddl);
      await withWorker(
        async ({ taskQueue }) => {
          const handle = await start(taskQueue, target);
          const manifest = await waitForManifest(handle);
          const result = await handle.result();
          // The report says why in words too (which value, which constraint), as well as by its code.
          const { message: said, ...load } = result.load!;
          assert.deepEqual(load, { outcome: 'failed', reason, rows: null });
          assert.match(said ?? '', message);
          assert.equal(result.terminalReceipt.outcome, 'abort');
          assert.equal(result.terminalReceipt.cleanupSucceeded, true);
          await filesGone(manifest);
          assert.equal(await lastAttempt(handle, 'loadTarget'), 1, 'a definite failure is not retried');
          assert.deepEqual(await targetState(), { rows: 0, fenced: 0, staging: 0 });
        },
        { targets: { warehouse: targetUrl() } },
      );
    });
  }

  /**
   * Runs `work` once a one-file run's load into the slow target is COPYing. The SDK sends heartbeats (and
   * so learns of a cancellation) at most every 0.8 × the heartbeat timeout; one file, so only a cancel on
   * the server (not the check between files) can stop the load early.
   */
  const whileLoading = async (work: (handle: Handle, manifest: Manifest) => Promise<void>): Promise<void> => {
    await recreateTarget(SLOW_TARGET);
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await start(
          taskQueue,
          { name: 'warehouse', table: 'dst.t' },
          { partitions: 1, timeouts: { loadHeartbeatMs: 2000, loadStartToCloseMs: 90 * 60_000 } },
        );
        const manifest = await waitForManifest(handle);
        await targetStatement('COPY');
        await work(handle, manifest);
      },
      { targets: { warehouse: targetUrl() } },
    );
  };

  it('cancelled mid-load: the target statement is cancelled, the target untouched, the run aborts after the transaction ended', async () => {
    await whileLoading(async (handle, manifest) => {
      await handle.cancel();
      await assert.rejects(handle.result(), WorkflowFailedError);
      assert.equal((await handle.query(statusQuery)).outcome, 'abort');
      await filesGone(manifest);
      assert.deepEqual(await targetState(), { rows: 0, fenced: 0, staging: 0 });
      const events = (await handle.fetchHistory()).events ?? [];
      const requested = events.findIndex((e) => e.activityTaskCancelRequestedEventAttributes);
      const cancelled = events.findIndex((e) => e.activityTaskCanceledEventAttributes);
      const released = events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'releaseOutputs');
      assert.ok(requested >= 0 && requested < cancelled && cancelled < released, 'the load reported its cancellation before the run decided');
      const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'loadTarget')!.activityTaskScheduledEventAttributes!;
      assert.equal(Number(scheduled.startToCloseTimeout!.seconds), 90 * 60, "the input's timeouts.loadStartToCloseMs bounds each load attempt");
      const at = (i: number): number => Number(events[i]!.eventTime!.seconds) * 1000 + (events[i]!.eventTime!.nanos ?? 0) / 1e6;
      // Left alone, the COPY runs ~6 s more; cancelled on the server it ends within a heartbeat.
      assert.ok(at(cancelled) - at(requested) < 4000, `the COPY was cancelled on the server (${at(cancelled) - at(requested)} ms)`);
    });
  });

  it('cancelled mid-load while the target takes no new session: the fence cannot say whether an attempt committed, so the run keeps its files (retain_commit_unknown)', async () => {
    await whileLoading(async (handle, manifest) => {
      // The loading session stays; the fence's question needs a new one.
      await admin().query(`ALTER DATABASE ${TARGET_DB} ALLOW_CONNECTIONS false`);
      try {
        await handle.cancel();
        await assert.rejects(handle.result(), WorkflowFailedError);
        assert.equal((await handle.query(statusQuery)).outcome, 'retain_commit_unknown');
      } finally {
        await admin().query(`ALTER DATABASE ${TARGET_DB} ALLOW_CONNECTIONS true`);
      }
      for (const f of manifest.files) await access(f.path);
      const receipt = await handle.query(terminalReceiptQuery);
      assert.deepEqual(receipt?.filesDeleted, []);
      assert.deepEqual(await targetState(), { rows: 0, fenced: 0, staging: 0 });
      const asked = ((await handle.fetchHistory()).events ?? []).filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'loadFenceVerdict',
      );
      assert.equal(asked.length, 1, 'the fence was asked once the load ended without a report');
    });
  });

  it('a loader worker killed mid-load is noticed within the heartbeat timeout and the load runs again on another worker', async () => {
    await recreateTarget(SLOW_TARGET);
    const taskQueue = `load-crash-${randomUUID()}`;
    const first = await spawnWorker(taskQueue, { PG_EXTRACT_TARGET_WAREHOUSE_URL: targetUrl() });
    workers.push(first);
    const heartbeatMs = 3000;
    const handle = await start(taskQueue, { name: 'warehouse', table: 'dst.t' }, { timeouts: { loadHeartbeatMs: heartbeatMs } });
    const firstLoad = await targetStatement('COPY');
    first.child.kill('SIGKILL');
    const killedAt = Date.now();
    assert.equal(await first.exited, null, 'killed by the signal');
    await withWorker(
      async () => {
        await targetStatement('COPY', { notPid: firstLoad });
        const noticedMs = Date.now() - killedAt;
        // The heartbeat timeout, the first retry interval (1 s), and a second for the new worker's poll.
        assert.ok(noticedMs < heartbeatMs + 3000, `the load ran again ${noticedMs} ms after the kill`);
        const result = await handle.result();
        assert.equal(result.terminalReceipt.outcome, 'success');
        assert.deepEqual(result.load, { outcome: 'committed', reason: null, rows: 3000 });
        assert.equal(await lastAttempt(handle, 'loadTarget'), 2);
      },
      { taskQueue, targets: { warehouse: targetUrl() } },
    );
    assert.deepEqual(await targetDigest(), expected);
  });
});

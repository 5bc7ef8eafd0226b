/**
 * A hot standby as the source (live: a primary and its streaming standby of our own). The standby
 * exports and imports snapshots as a primary does; a recovery conflict (the standby replaying the
 * primary's removal of rows a snapshot still sees, hot_standby_feedback off) ends the run with
 * SOURCE_RECOVERY_CONFLICT and what to change, not an unnamed SQLSTATE_40001, also when it ends a
 * session between two queries (where pg alone reports only that the session is not queryable).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { type ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { toActivityFailure } from '../../src/activities/failures';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { ErrorCode } from '../../src/errors';
import { failureChain } from '../support/failure-chain';
import { CopyOutStream } from '../../src/postgres/copy-out-stream';
import { closeSession, openSession } from '../../src/postgres/session';
import { live } from '../support/services';
import { type StandbyPair, churning, query, replayed, startStandbyPair } from '../support/standby';
import { withWorker } from '../support/worker';

describe('a hot standby as the source (live)', function () {
  this.timeout(180_000);
  let pair: StandbyPair | undefined;
  const primary = () => pair!.primary;
  const standby = () => pair!.standby;

  before(async () => {
    pair = await startStandbyPair(
      `CREATE SCHEMA rs;
       CREATE TABLE rs.a (id int PRIMARY KEY, v text); INSERT INTO rs.a SELECT g, md5(g::text) FROM generate_series(1, 200000) g;
       CREATE TABLE rs.b (id int PRIMARY KEY, a int NOT NULL REFERENCES rs.a); INSERT INTO rs.b SELECT g, g FROM generate_series(1, 1000) g;
       CREATE TABLE rs.churn (id int PRIMARY KEY, n int); INSERT INTO rs.churn VALUES (1, 0);
       CREATE UNLOGGED TABLE rs.u (id int); INSERT INTO rs.u VALUES (1); CREATE VIEW rs.uv AS SELECT id FROM rs.u`,
    );
  });
  after(async () => {
    await pair?.stop();
  });

  it('exports a set of tables at one exported snapshot, as from a primary', async () => {
    assert.deepEqual(await query(standby().url, 'SELECT pg_is_in_recovery() AS standby'), [{ standby: true }]);
    const result = await withWorker(
      async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, { tables: ['rs.a', 'rs.b'], partitions: 3 }, { taskQueue });
        const manifest = await waitForManifest(handle);
        const ids = (await Promise.all(manifest.files.map((f) => readFile(f.path, 'utf8'))))
          .flatMap((body) => body.trimEnd().split('\n').slice(1))
          .map((line) => Number(line.split(',')[0]));
        assert.deepEqual([ids.length, ids.reduce((a, b) => a + b, 0)], [201_000, (200_000 * 200_001) / 2 + (1000 * 1001) / 2]);
        await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
        return (await handle.result()) as ExtractionResult;
      },
      { sourceUrl: standby().url },
    );
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.equal(result.extractionReceipt?.snapshotAuthority, 'postgresql.exported_snapshot');
  });

  it('an unlogged table, or a view reading one, is refused with SOURCE_UNLOGGED_ON_STANDBY before any file (a standby keeps none of their rows; it failed with 0A000 after retries)', async () => {
    await withWorker(
      async ({ taskQueue }) => {
        for (const tables of [['rs.b', 'rs.u'], ['rs.uv']]) {
          const handle = await startExtraction(live().temporal.client, { tables }, { taskQueue });
          await assert.rejects(handle.result(), (err: unknown) => {
            assert.ok(err instanceof WorkflowFailedError);
            assert.match(failureChain(err), /SOURCE_UNLOGGED_ON_STANDBY: rs\.uv? reads an unlogged table, and the source is a standby/);
            return true;
          });
          const events = (await handle.fetchHistory()).events ?? [];
          const scheduled = events.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
          assert.ok(!scheduled.some((name) => /^copy/.test(name!)), `no copy: ${scheduled.join(', ')}`);
        }
      },
      { sourceUrl: standby().url },
    );
  });

  it('a session a conflict ends while it sits between two queries fails its next query or COPY with the conflict, not with "not queryable"', async () => {
    const session = await openSession(standby().url, 'coordinator');
    try {
      await session.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await session.query('SELECT n FROM rs.churn');
      // Idle in its transaction, the session cannot be sent an ERROR: the standby ends it (FATAL) instead.
      await churning(primary().url, 'rs.churn', () => new Promise((resolve) => session.once('end', resolve)));
      const ended = await session.query('SELECT 1').then(
        () => assert.fail('the session outlived the conflict'),
        (err: Error & { code?: string }) => err,
      );
      assert.deepEqual([ended.code, ended.message], ['40001', 'terminating connection due to conflict with recovery']);
      assert.equal((toActivityFailure(ended) as ApplicationFailure).type, ErrorCode.SOURCE_RECOVERY_CONFLICT);
      // A COPY (a stream pg hands the connection to) fails the same way: the next query between two batches of files is one.
      const copy = session.query(new CopyOutStream('COPY rs.b TO STDOUT'));
      assert.equal(await new Promise((resolve) => copy.once('error', resolve)), ended);
    } finally {
      await closeSession(session);
    }
  });

  /** Runs `request` on the standby, which must fail; returns its failure's cause chain as `TYPE: message` lines. */
  async function failedRunChain(request: Omit<ExtractionRequest, 'source'>): Promise<string> {
    const failure = await withWorker(
      async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, request, { taskQueue });
        // Waits for the manifest, which a failed run never publishes (it rejects with the run's failure).
        return waitForManifest(handle).then(
          async () => {
            await handle.terminate('extracted despite the conflicts');
            assert.fail('the run extracted despite the conflicts');
          },
          (err: unknown) => err,
        );
      },
      { sourceUrl: standby().url },
    );
    assert.ok(failure instanceof WorkflowFailedError);
    return failureChain(failure);
  }

  it('a recovery conflict ends the run naming SOURCE_RECOVERY_CONFLICT, not an unnamed SQLSTATE_40001', async () => {
    const chain = await churning(primary().url, 'rs.churn', () => failedRunChain({ tables: ['rs.a', 'rs.b'], partitions: 3, maxSnapshotAttempts: 2 }));
    assert.match(chain, /SOURCE_RECOVERY_CONFLICT: .*conflict with recovery/, chain);
    assert.doesNotMatch(chain, /SQLSTATE_40001/, chain);
  });

  it('a conflict that ends the holder while it plans (counting a slow view) loses the snapshot: fresh ones until maxSnapshotAttempts, then ATTEMPTS_EXHAUSTED naming it', async () => {
    await query(primary().url, 'CREATE VIEW rs.slow AS SELECT g AS id FROM generate_series(1, 300) g WHERE pg_sleep(0.01) IS NOT NULL');
    await replayed(primary().url, standby().url);
    const chain = await churning(primary().url, 'rs.churn', () => failedRunChain({ tables: ['rs.slow', 'rs.b'], maxSnapshotAttempts: 2 }));
    // Before, the first conflict failed the run: before its plan, only a timeout lost the holder's snapshot.
    assert.match(chain, /^ATTEMPTS_EXHAUSTED: the snapshot was lost 2 times \(the last time, SOURCE_RECOVERY_CONFLICT: .*conflict with recovery/m, chain);
  });
});

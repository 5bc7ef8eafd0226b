/**
 * Losing the snapshot holder mid-run: the attempt is discarded and a fresh snapshot is taken;
 * the final manifest comes from one snapshot only and the rows are exact. A discard that fails
 * (test/support/failed-discard.ts) is recorded on its attempt, and whatever way the run ends
 * (its terminal release, a cancellation, or a failure such as exhausted attempts) that folder is
 * discarded again: a failed attempt's files would otherwise stay for good, listed nowhere.
 */
import assert from 'node:assert/strict';
import { access, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { WorkflowFailedError, WorkflowHandle } from '@temporalio/client';
import { type ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate, terminalReceiptQuery } from '../../src/contract/definitions';
import type { ReleaseOutputsRequest } from '../../src/contract/activity-requests';
import type { AttemptRecord, ExtractionResult } from '../../src/contract/extraction-types';
import type { ReleaseReport } from '../../src/lifecycle/terminal';
import { admin, manifestDigest, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { chattrWorks, failFirstDiscard, findFolder, loseSnapshot, untilPartitionDone } from '../support/failed-discard';
import { failureChain } from '../support/failure-chain';
import { live } from '../support/services';
import { startTestWorker, withWorker } from '../support/worker';

async function finish(handle: WorkflowHandle): Promise<ExtractionResult> {
  await waitForManifest(handle);
  await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'unknown' }] });
  return (await handle.result()) as ExtractionResult;
}

function assertOneFreshSnapshot(result: ExtractionResult, runFolder: string): void {
  const { manifest, attempts } = result;
  assert.equal(attempts[0]!.result, 'snapshot_lost', JSON.stringify(attempts));
  assert.equal(attempts.at(-1)!.result, 'completed');
  assert.equal(manifest.attempt, attempts.length);
  assert.ok(
    manifest.files.every((f) => f.snapshotDigest === manifest.snapshotDigest),
    'one snapshot in the manifest',
  );
  assert.ok(
    manifest.files.every((f) => f.name.startsWith(`${runFolder}/`) && dirname(f.name).endsWith(`/attempt-${manifest.attempt}`)),
    'files of the last attempt only',
  );
}

/** The run's last releaseOutputs activity: what it was asked and what it reported. */
function lastRelease(history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>): { request: ReleaseOutputsRequest; report: ReleaseReport } {
  const events = history.events ?? [];
  const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'releaseOutputs').at(-1);
  assert.ok(scheduled, 'a release was scheduled');
  const completed = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled.eventId));
  assert.ok(completed, 'that release completed');
  return {
    request: defaultPayloadConverter.fromPayload(scheduled.activityTaskScheduledEventAttributes!.input!.payloads![0]!),
    report: defaultPayloadConverter.fromPayload(completed.activityTaskCompletedEventAttributes!.result!.payloads![0]!),
  };
}

describe('snapshot holder loss (live)', function () {
  this.timeout(180_000);
  let table: string;
  let expected: { count: number; md5: string };
  before(async () => {
    table = await seedMixedTable('loss', 60_000);
    expected = await tableDigest(`SELECT * FROM ${table}`);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it("the coordinator's backend terminated mid-run → a fresh attempt from one new snapshot, exact rows", async () => {
    // One activity at a time, so partitions are still pending when the coordinator dies.
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, { table, partitions: 8, outDir: 'loss-terminate' }, { taskQueue });
        await untilPartitionDone(handle);
        const killed = await admin().query(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator'`);
        assert.equal(killed.rowCount, 1);
        const result = await finish(handle);
        assertOneFreshSnapshot(result, 'loss-terminate');
        assert.deepEqual(await manifestDigest(table, result.manifest), expected);
        await assert.rejects(access(join(dirname(dirname(result.manifest.files[0]!.path)), 'attempt-1')), 'the lost attempt left nothing');
      },
      { maxConcurrentActivities: 1 },
    );
  });

  it('the worker holding the snapshot shuts down mid-run; another worker finishes from a fresh snapshot', async () => {
    const first = await startTestWorker({ maxConcurrentActivities: 1 });
    const handle = await startExtraction(
      live().temporal.client,
      { table, partitions: 8, outDir: 'loss-restart', timeouts: { holderHeartbeatMs: 3000, partitionHeartbeatMs: 3000 } },
      { taskQueue: first.taskQueue },
    );
    try {
      await untilPartitionDone(handle);
    } finally {
      first.worker.shutdown();
      await first.running;
    }
    await withWorker(
      async () => {
        const result = await finish(handle);
        assertOneFreshSnapshot(result, 'loss-restart');
        assert.deepEqual(await manifestDigest(table, result.manifest), expected);
      },
      { taskQueue: first.taskQueue },
    );
  });

  /** Skips the test where this file system has no immutable flag (chattr). */
  async function requireChattr(test: Mocha.Context): Promise<void> {
    if (!(await chattrWorks(live().scratch))) test.skip();
  }

  /** Starts a run into `outDir` whose first attempt loses its snapshot and fails to discard its folder (its parent immutable meanwhile), or a file of it. */
  async function firstDiscardFails(taskQueue: string, outDir: string, { frozen, ...request }: { maxSnapshotAttempts?: number; frozen?: 'part file' } = {}) {
    const handle = await startExtraction(live().temporal.client, { table, partitions: 8, outDir, ...request }, { taskQueue });
    await failFirstDiscard(handle, join(live().outRoot, outDir), frozen);
    return handle;
  }

  it("a discard that fails (its parent folder immutable) → the fresh-snapshot retry goes on; the attempt record carries the cleanup code, and the run's end discards the folder", async function () {
    await requireChattr(this);
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await firstDiscardFails(taskQueue, 'loss-immutable');
        const result = await finish(handle);
        assertOneFreshSnapshot(result, 'loss-immutable');
        assert.equal(result.attempts[0]!.cleanupErrorCode, 'EPERM', JSON.stringify(result.attempts));
        assert.equal(result.attempts.at(-1)!.cleanupErrorCode, null);
        // The run's end discards what that discard left (before, its files stayed for good, unlisted).
        await assert.rejects(findFolder(join(live().outRoot, 'loss-immutable'), 'attempt-1'), /no attempt-1/);
        assert.ok(await findFolder(join(live().outRoot, 'loss-immutable'), 'attempt-2'), 'the retained attempt stays');
        assert.deepEqual(await manifestDigest(table, result.manifest), expected);
      },
      { maxConcurrentActivities: 1 },
    );
  });

  it('a failed discard, then the run cancelled while it extracts → the cancellation discards that folder too, and the receipt is abort', async function () {
    await requireChattr(this);
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await firstDiscardFails(taskQueue, 'loss-immutable-cancelled');
        await handle.cancel();
        await assert.rejects(handle.result());
        // Before, the first attempt's files stayed for good, and the receipt said every cleanup succeeded.
        assert.deepEqual(await readdir(join(live().outRoot, 'loss-immutable-cancelled'), { recursive: true }).catch(() => []), [], 'nothing left');
        const receipt = await handle.query(terminalReceiptQuery);
        assert.deepEqual([receipt?.outcome, receipt?.cleanupSucceeded, receipt?.cleanupErrorCode], ['abort', true, null]);
      },
      { maxConcurrentActivities: 1 },
    );
  });

  it('a failed discard, then the run fails (its fresh snapshot lost too, attempts exhausted) → the failed run discards that folder again: nothing of it is left', async function () {
    await requireChattr(this);
    await withWorker(
      async ({ taskQueue }) => {
        const outDir = 'loss-immutable-failed';
        // A part file that cannot be deleted: the discard leaves it, with its folder.
        const handle = await firstDiscardFails(taskQueue, outDir, { maxSnapshotAttempts: 2, frozen: 'part file' });
        await untilPartitionDone(handle, 2);
        await loseSnapshot();
        const failed = await handle.result().then(
          () => assert.fail('the run completed'),
          (err: unknown) => err as WorkflowFailedError,
        );
        assert.match(failureChain(failed), /^ATTEMPTS_EXHAUSTED: the snapshot was lost 2 times/m);
        const attempts = (failed.cause as ApplicationFailure).details?.[0] as AttemptRecord[];
        assert.deepEqual(
          attempts.map((a) => [a.result, a.cleanupErrorCode]),
          [
            ['snapshot_lost', 'EPERM'],
            ['snapshot_lost', null],
          ],
        );
        // Before, that file and its folder stayed for good: a failed run has no terminal release.
        assert.deepEqual(await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []), [], 'nothing left');
        // What did it: the run's last release (after the second attempt's own discard), of that folder only, which reported no failure.
        const { request, report } = lastRelease(await handle.fetchHistory());
        assert.deepEqual(request.discardFolders, [`${outDir}/${handle.firstExecutionRunId}/attempt-1`]);
        assert.deepEqual(report.failures, []);
      },
      { maxConcurrentActivities: 1 },
    );
  });
});

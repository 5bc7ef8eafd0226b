/**
 * Losing the snapshot holder mid-run: the attempt is discarded and a fresh snapshot is taken;
 * the final manifest comes from one snapshot only and the rows are exact.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, mkdir, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { WorkflowHandle } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate, statusQuery, terminalReceiptQuery } from '../../src/contract/definitions';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { admin, manifestDigest, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';
import { startTestWorker, withWorker } from '../support/worker';
import { eventually } from '../support/eventually';

async function untilPartitionDone(handle: WorkflowHandle): Promise<void> {
  const partitionDone = async (): Promise<boolean> => {
    const s = await handle.query(statusQuery);
    if (s.attempt === 1 && s.partitionsDone >= 1) return true;
    if (s.attempt > 1 || s.phase !== 'extracting') throw new Error(`missed the window: ${JSON.stringify(s)}`);
    return false;
  };
  await eventually(partitionDone, 'a partition of attempt 1 was done', { intervalMs: 10 });
}

/** The folder under `parent` (at most two levels down) named `name`. */
async function findFolder(parent: string, name: string): Promise<string> {
  for (const entry of await readdir(parent, { withFileTypes: true, recursive: true })) {
    if (entry.isDirectory() && entry.name === name) return join(entry.parentPath, entry.name);
  }
  throw new Error(`no ${name} under ${parent}`);
}

async function untilAttempt(handle: WorkflowHandle, attempt: number, timeoutMs: number): Promise<void> {
  await eventually(async () => (await handle.query(statusQuery)).attempt >= attempt, `attempt ${attempt} started`, { timeoutMs });
}

const chattr = (flag: '+i' | '-i', path: string) => promisify(execFile)('chattr', [flag, path]);

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
    const probe = join(live().scratch, `chattr-${process.pid}`);
    await mkdir(probe, { recursive: true });
    const works = await chattr('+i', probe)
      .then(() => chattr('-i', probe))
      .then(
        () => true,
        () => false,
      );
    if (!works) test.skip();
  }

  /** Starts a run into `outDir` whose first attempt loses its snapshot and fails to discard its folder (its parent immutable meanwhile). */
  async function firstDiscardFails(taskQueue: string, outDir: string): Promise<WorkflowHandle> {
    const handle = await startExtraction(live().temporal.client, { table, partitions: 8, outDir }, { taskQueue });
    await untilPartitionDone(handle);
    // Neither rename nor rmdir can touch the attempt folder inside an immutable folder, root or not.
    const frozen = dirname(await findFolder(join(live().outRoot, outDir), 'attempt-1'));
    await chattr('+i', frozen);
    try {
      await admin().query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator'`);
      await untilAttempt(handle, 2, 30_000);
    } finally {
      await chattr('-i', frozen);
    }
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
});

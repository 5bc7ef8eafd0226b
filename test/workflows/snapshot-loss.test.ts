/**
 * Losing the snapshot holder mid-run: the attempt is discarded and a fresh snapshot is taken;
 * the final manifest comes from one snapshot only and the rows are exact.
 */
import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate, statusQuery } from '../../src/shared/definitions';
import type { ExtractionResult } from '../../src/shared/extraction-types';
import { admin, filesDigest, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';
import { startTestWorker, withWorker } from '../support/worker';

async function untilPartitionDone(handle: WorkflowHandle): Promise<void> {
  for (;;) {
    const s = await handle.query(statusQuery);
    if (s.attempt === 1 && s.partitionsDone >= 1) return;
    if (s.attempt > 1 || s.phase !== 'extracting') throw new Error(`missed the window: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

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
  assert.ok(manifest.files.every((f) => f.snapshotDigest === manifest.snapshotDigest), 'one snapshot in the manifest');
  assert.ok(manifest.files.every((f) => f.name.startsWith(`${runFolder}/attempt-${manifest.attempt}/`)), 'files of the last attempt only');
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
        assert.deepEqual(await filesDigest(table, result.manifest.files.map((f) => f.path)), expected);
        await assert.rejects(access(join(live().outRoot, 'loss-terminate', 'attempt-1')), 'the lost attempt left nothing');
      },
      { maxConcurrentActivities: 1 },
    );
  });

  it('the worker holding the snapshot shuts down mid-run; another worker finishes from a fresh snapshot', async () => {
    const first = await startTestWorker({ maxConcurrentActivities: 1 });
    const handle = await startExtraction(live().temporal.client, { table, partitions: 8, outDir: 'loss-restart', timeouts: { holderHeartbeatMs: 3000, partitionHeartbeatMs: 3000 } }, { taskQueue: first.taskQueue });
    try {
      await untilPartitionDone(handle);
    } finally {
      first.worker.shutdown();
      await first.running;
    }
    await withWorker(async () => {
      const result = await finish(handle);
      assertOneFreshSnapshot(result, 'loss-restart');
      assert.deepEqual(await filesDigest(table, result.manifest.files.map((f) => f.path)), expected);
    }, { taskQueue: first.taskQueue });
  });
});

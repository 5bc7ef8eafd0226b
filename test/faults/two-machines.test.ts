/**
 * Two workers that share no disk, as on two machines. With output on S3 (one bucket) the
 * partitions land on both, one worker is SIGKILLed mid-run, and the run still ends with exact
 * rows, checksums, and nothing left in the bucket after release. With local output folders that
 * are not shared, the run fails with OUTPUT_NOT_VISIBLE instead of delivering a manifest nobody
 * can read.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { filesDigest, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { bucketContents, download, s3Service } from '../support/s3';
import { live } from '../support/services';
import { type WorkerProcess, spawnWorker } from '../support/worker-process';
import { eventually } from '../support/eventually';

const BUCKET = 'pgx-two-machines';

/** The identities of the workers that started copyPartition tasks so far. */
async function partitionWorkers(handle: WorkflowHandle): Promise<Set<string>> {
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'copyPartition').map((e) => String(e.eventId)));
  return new Set(
    events
      .filter((e) => e.activityTaskStartedEventAttributes && scheduled.has(String(e.activityTaskStartedEventAttributes.scheduledEventId)))
      .map((e) => e.activityTaskStartedEventAttributes!.identity ?? ''),
  );
}

describe('two workers that share no disk (live)', function () {
  this.timeout(180_000);
  let table: string;
  let expected: { count: number; md5: string };
  const workers: WorkerProcess[] = [];

  before(async () => {
    await (await s3Service()).createBucket(BUCKET);
    table = await seedMixedTable('twom', 120_000);
    expected = await tableDigest(`SELECT * FROM ${table}`);
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    assert.deepEqual(await settleSessions(10_000), [], 'no session of ours is left');
  });

  it('output on S3: partitions land on both, one is SIGKILLed mid-run, the other finishes; exact rows; release leaves the bucket empty', async () => {
    const s3 = await s3Service();
    const taskQueue = `two-${randomUUID()}`;
    for (const name of ['a', 'b']) {
      const root = await mkdtemp(join(live().scratch, `machine-${name}-`));
      workers.push(await spawnWorker(taskQueue, { ...s3.env, PG_EXTRACT_OUT_DIR: root, PG_EXTRACT_MAX_CONCURRENT_ACTIVITIES: '1' }));
    }
    const prefix = `run-${randomUUID()}`;
    const handle = await startExtraction(
      live().temporal.client,
      { table, partitions: 12, outDir: `s3://${BUCKET}/${prefix}`, timeouts: { holderHeartbeatMs: 3000, partitionHeartbeatMs: 3000 } },
      { taskQueue },
    );
    await eventually(async () => (await partitionWorkers(handle)).size >= 2, 'partitions started on both workers', { timeoutMs: 60_000 });
    const victim = workers[1]!;
    victim.child.kill('SIGKILL');
    assert.equal(await victim.exited, null, 'killed by the signal');

    const manifest = await waitForManifest(handle);
    const local = await download(
      manifest.files.map((f) => f.path),
      await mkdtemp(join(live().scratch, 'two-')),
    );
    assert.deepEqual(await filesDigest(table, local), expected, 'exact rows and checksum');
    assert.ok(
      manifest.files.every((f) => f.snapshotDigest === manifest.snapshotDigest),
      'one snapshot',
    );
    const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    assert.equal(receipt.cleanupSucceeded, true, JSON.stringify(receipt));
    const result = (await handle.result()) as ExtractionResult;
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.deepEqual(await bucketContents(BUCKET, `${prefix}/`), { objects: [], uploads: [] }, 'no object and no incomplete upload left');
  });

  it('local output folders that are not shared: the run fails with OUTPUT_NOT_VISIBLE, writing nothing outside its own folder', async () => {
    const taskQueue = `apart-${randomUUID()}`;
    const roots = [await mkdtemp(join(live().scratch, 'apart-a-')), await mkdtemp(join(live().scratch, 'apart-b-'))];
    for (const root of roots) workers.push(await spawnWorker(taskQueue, { PG_EXTRACT_OUT_DIR: root, PG_EXTRACT_MAX_CONCURRENT_ACTIVITIES: '1' }));
    const handle = await startExtraction(live().temporal.client, { table, partitions: 8 }, { taskQueue });
    await assert.rejects(handle.result(), (err: unknown) => {
      assert.ok(err instanceof WorkflowFailedError);
      assert.match(JSON.stringify(err.cause), /OUTPUT_NOT_VISIBLE/);
      return true;
    });
    // A release runs on one worker and cannot reach another machine's disk: whatever a partition
    // committed there stays (its receipt said FILES_NOT_VISIBLE), but only inside this run's folder.
    const runFolder = join(handle.workflowId, handle.firstExecutionRunId);
    const left = (await Promise.all(roots.map((root) => readdir(root, { recursive: true })))).flat();
    assert.deepEqual(
      left.filter((e) => !runFolder.startsWith(e) && !e.startsWith(`${runFolder}/`)),
      [],
      'nothing outside the run folder',
    );
  });
});

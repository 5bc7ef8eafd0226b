/**
 * Runs whose output is `s3://bucket/prefix`, through the workflow against a real S3 server
 * (SeaweedFS): objects receipted with their ETag and exact rows, deleted (checked) on success and
 * abort, kept on retain with no incomplete upload left, and bad buckets, credentials or endpoints
 * refused while planning, before any partition starts.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import { runOutputs } from '../../src/contract/run-outputs';
import { filesDigest, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { bucketContents, download, gatedS3Proxy, refusingS3Proxy, s3Service } from '../support/s3';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

const BUCKET = 'pgx-runs';

describe('output on S3 (live SeaweedFS + Temporal + PostgreSQL)', function () {
  this.timeout(120_000);
  let table: string;
  let expected: { count: number; md5: string };
  let s3Env: Record<string, string>;

  before(async () => {
    const s3 = await s3Service();
    await s3.createBucket(BUCKET);
    s3Env = s3.env;
    table = await seedMixedTable('s3out', 30_000);
    expected = await tableDigest(`SELECT * FROM ${table}`);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  for (const [report, outcome, kept] of [
    ['committed', 'success', false],
    ['unknown', 'retain_commit_unknown', true],
  ] as const) {
    it(`3 partitions to s3://${BUCKET}/…; ${report} → ${outcome}: objects ${kept ? 'kept' : 'deleted'}, no upload left`, async () => {
      const prefix = `runs-${report}`;
      await withWorker(
        async ({ client, taskQueue }) => {
          const handle = await startExtraction(client, { table, partitions: 3, outDir: `s3://${BUCKET}/${prefix}/` }, { taskQueue });
          const manifest = await waitForManifest(handle);
          assert.equal(manifest.files.length, 3);
          for (const f of manifest.files) {
            assert.ok(f.path.startsWith(`s3://${BUCKET}/${prefix}/${handle.firstExecutionRunId}/attempt-1/part-`), f.path);
            assert.equal(f.name, f.path, 'the receipt names the object');
            assert.match(f.etag ?? '', /^[0-9a-f]{32}(-\d+)?$/, 'an ETag');
          }
          assert.deepEqual(
            manifest.extractionReceipt!.evidence.map((e) => e.name),
            manifest.files.map((f) => f.path),
          );
          const local = await download(
            manifest.files.map((f) => f.path),
            await mkdtemp(join(live().scratch, 's3-')),
          );
          assert.deepEqual(await filesDigest(table, local), expected, 'exact rows and checksum');
          const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: report }] });
          assert.equal(receipt.outcome, outcome);
          assert.equal(receipt.cleanupSucceeded, true);
          const left = await bucketContents(BUCKET, `${prefix}/`);
          assert.deepEqual(left.uploads, [], 'no incomplete multipart upload');
          assert.deepEqual(
            left.objects.sort(),
            kept
              ? runOutputs(manifest)
                  .map((p) => p.slice(`s3://${BUCKET}/`.length))
                  .sort()
              : [],
          );
          assert.deepEqual([...receipt.filesRetained].sort(), kept ? runOutputs(manifest).sort() : []);
        },
        { s3Env },
      );
    });
  }

  it('one partition (whole COPY) to S3 loads back exactly; abort deletes it', async () => {
    await withWorker(
      async ({ client, taskQueue }) => {
        const handle = await startExtraction(client, { table, partitions: 1, gzip: true, outDir: `s3://${BUCKET}/whole` }, { taskQueue });
        const manifest = await waitForManifest(handle);
        const local = await download([manifest.files[0]!.path], await mkdtemp(join(live().scratch, 's3-')));
        assert.deepEqual(await filesDigest(table, local, { format: 'csv', header: true, gzip: true }), expected);
        const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
        assert.equal(receipt.outcome, 'abort');
        assert.equal(receipt.cleanupSucceeded, true);
        assert.deepEqual(await bucketContents(BUCKET, 'whole/'), { objects: [], uploads: [] });
      },
      { s3Env },
    );
  });

  it('zstd objects: the receipts are of the compressed bytes stored, which zstd -d restores to the exact rows', async () => {
    await withWorker(
      async ({ client, taskQueue }) => {
        const handle = await startExtraction(client, { table, partitions: 2, compression: 'zstd', outDir: `s3://${BUCKET}/zstd` }, { taskQueue });
        const manifest = await waitForManifest(handle);
        assert.ok(manifest.files.every((f) => f.path.endsWith('.csv.zst')));
        const local = await download(
          manifest.files.map((f) => f.path),
          await mkdtemp(join(live().scratch, 's3-')),
        );
        for (const [i, path] of local.entries()) {
          const stored = await readFile(path);
          assert.equal(createHash('sha256').update(stored).digest('hex'), manifest.files[i]!.sha256);
          assert.equal(stored.length, manifest.files[i]!.bytes);
        }
        assert.deepEqual(await filesDigest(table, local, { format: 'csv', header: true, compression: 'zstd' }), expected);
        const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
        assert.equal(receipt.cleanupSucceeded, true);
        assert.deepEqual(await bucketContents(BUCKET, 'zstd/'), { objects: [], uploads: [] });
      },
      { s3Env },
    );
  });

  it("a cancellation while a whole copy's data package is being written waits for that write, then discards it: nothing is left", async () => {
    const proxy = await gatedS3Proxy('PUT', /\/datapackage\.json/);
    try {
      await withWorker(
        async ({ client, taskQueue }) => {
          const handle = await startExtraction(client, { table, partitions: 1, outDir: `s3://${BUCKET}/package-cancelled` }, { taskQueue });
          await proxy.held;
          await handle.cancel();
          const ended = handle.result().then(
            () => 'ended',
            () => 'ended',
          );
          // It ended here, while the write was held, and the write then landed in the attempt it had discarded.
          const meanwhile = await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 3000, 'waiting'))]);
          await proxy.release();
          await assert.rejects(handle.result(), (err: unknown) => err instanceof WorkflowFailedError && err.cause?.name === 'CancelledFailure');
          assert.equal(meanwhile, 'waiting', 'the run waits for the write it cancelled');
          assert.deepEqual(await bucketContents(BUCKET, 'package-cancelled/'), { objects: [], uploads: [] });
        },
        { s3Env: { ...s3Env, AWS_ENDPOINT_URL_S3: proxy.url } },
      );
    } finally {
      await proxy.close();
    }
  });

  it("storage that refuses the receipt's check of the objects fails the run with S3_ACCESS_DENIED once, without copying again under fresh snapshots", async () => {
    // The writer checks each upload with a HEAD that asks for its checksum; completing the receipt checks each object with a plain one.
    const proxy = await refusingS3Proxy(
      (req) => req.method === 'HEAD' && /^\/pgx-runs\/visibility-denied\/.+/.test(req.url ?? '') && req.headers['x-amz-checksum-mode'] === undefined,
    );
    try {
      await withWorker(
        async ({ client, taskQueue }) => {
          const handle = await startExtraction(client, { table, partitions: 2, outDir: `s3://${BUCKET}/visibility-denied` }, { taskQueue });
          await assert.rejects(handle.result(), (err: unknown) => {
            assert.ok(err instanceof WorkflowFailedError);
            assert.match(JSON.stringify(err.cause), /S3_ACCESS_DENIED/);
            assert.doesNotMatch(JSON.stringify(err.cause), /ATTEMPTS_EXHAUSTED/);
            return true;
          });
          const events = (await handle.fetchHistory()).events ?? [];
          const scheduled = events.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
          assert.equal(scheduled.filter((name) => name === 'completeSnapshot').length, 1, `completed once: ${scheduled.join(', ')}`);
          assert.equal(scheduled.filter((name) => name === 'holdSnapshot').length, 1, 'one snapshot, no fresh attempt');
          assert.ok(proxy.refused() >= 1, 'the check was refused');
          assert.deepEqual(await bucketContents(BUCKET, 'visibility-denied/'), { objects: [], uploads: [] });
        },
        { s3Env: { ...s3Env, AWS_ENDPOINT_URL_S3: proxy.url } },
      );
    } finally {
      await proxy.close();
    }
  });

  for (const [what, bucket, env, code] of [
    ['a bucket that does not exist', 'pgx-no-such-bucket', {}, 'S3_BUCKET_NOT_FOUND'],
    ['wrong credentials', BUCKET, { AWS_SECRET_ACCESS_KEY: 'not-the-secret' }, 'S3_ACCESS_DENIED'],
    ['an unreachable endpoint', BUCKET, { AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:1' }, 'S3_UNREACHABLE'],
  ] as const) {
    it(`${what} fails the run with ${code} while planning: no partition starts, nothing is written`, async () => {
      await withWorker(
        async ({ client, taskQueue }) => {
          const prefix = `refused-${code.toLowerCase()}`;
          const handle = await startExtraction(client, { table, partitions: 2, outDir: `s3://${bucket}/${prefix}` }, { taskQueue });
          await assert.rejects(handle.result(), (err: unknown) => {
            assert.ok(err instanceof WorkflowFailedError);
            assert.match(JSON.stringify(err.cause), new RegExp(code));
            return true;
          });
          const events = (await handle.fetchHistory()).events ?? [];
          const scheduled = events.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
          assert.ok(!scheduled.includes('copyPartition'), `no partition started: ${scheduled.join(', ')}`);
          assert.deepEqual(await bucketContents(BUCKET, `${prefix}/`), { objects: [], uploads: [] });
        },
        { s3Env: { ...s3Env, ...env } },
      );
    });
  }
});

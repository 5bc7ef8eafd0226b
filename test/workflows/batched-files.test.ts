/**
 * Batched files (--max-file-bytes / --max-file-rows) through the workflow, live: every file within
 * its bounds (a single row wider than the byte bound alone in its file), the files together exactly
 * the source's rows, listed in order under sortable names, receipted one by one, nothing else in
 * the folder, on a local disk and on S3, csv and binary, gzip; and from the CLI.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { Manifest } from '../../src/contract/extraction-types';
import { runOutputs } from '../../src/contract/run-outputs';
import { admin, filesDigest, manifestDigest, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { cli, cliJson, liveCliEnv } from '../support/cli';
import { bucketContents, download, s3Service } from '../support/s3';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

const BUCKET = 'pgx-batched';

/** The run's folder holds the files its outputs list (the files and their data package), and nothing else. */
async function assertOnlyListedFiles(manifest: Manifest): Promise<void> {
  const listed = runOutputs(manifest).map((p) => basename(p));
  const present = (await readdir(dirname(manifest.files[0]!.path))).filter((e) => !e.startsWith('.'));
  assert.deepEqual(present.sort(), listed.sort(), 'only the listed files');
}

/** The files of each partition, named part-NNNN-batch-NNNNN, listed in partition then batch order. */
function assertOrdered(manifest: Manifest, ext: string): void {
  const names = manifest.files.map((f) => basename(f.path));
  for (const [i, f] of manifest.files.entries()) {
    assert.equal(names[i], `part-${String(f.partition).padStart(4, '0')}-batch-${String(f.batch).padStart(5, '0')}${ext}`);
  }
  assert.deepEqual([...names].sort(), names, 'the manifest lists them in name order');
  for (const [i, f] of manifest.files.entries()) {
    const previous = manifest.files[i - 1];
    assert.equal(f.batch, previous?.partition === f.partition ? previous.batch! + 1 : 0, 'batches numbered 0, 1, 2… per partition');
  }
  assert.deepEqual(
    manifest.extractionReceipt!.evidence.map((e) => e.name),
    manifest.files.map((f) => f.name),
    'each file receipted',
  );
}

describe('batched files (live PostgreSQL + Temporal + SeaweedFS)', function () {
  this.timeout(180_000);
  let table: string;
  let expected: { count: number; md5: string };

  before(async () => {
    table = await seedMixedTable('batched', 20_000);
    expected = await tableDigest(`SELECT * FROM ${table}`);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('3 partitions, csv + gzip, --max-file-bytes 16KiB: every file within it as stored, exact rows, nothing else in the folder', async () => {
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(client, { table, partitions: 3, gzip: true, maxFileBytes: '16KiB', outDir: 'batched-bytes' }, { taskQueue });
      const manifest = await waitForManifest(handle);
      assert.ok(manifest.files.length > 6, `several files per partition (${manifest.files.length})`);
      assert.deepEqual(new Set(manifest.files.map((f) => f.partition)), new Set([0, 1, 2]));
      for (const f of manifest.files) {
        assert.ok(f.bytes <= 16 * 1024 && f.rows > 0, `${f.name}: ${f.bytes} bytes`);
        assert.equal((await stat(f.path)).size, f.bytes);
      }
      assertOrdered(manifest, '.csv.gz');
      assert.deepEqual(await manifestDigest(table, manifest, { format: 'csv', header: true, gzip: true }), expected, 'exact rows');
      await assertOnlyListedFiles(manifest);
      const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      assert.equal(receipt.cleanupSucceeded, true);
      assert.deepEqual(await readdir(join(live().outRoot, 'batched-bytes')).catch(() => []), [], 'nothing left after success');
    });
  });

  it('whole copy (1 partition), --max-file-rows 7000: files of 7000, 7000, 6000 rows with headers; the receipt completes over all of them', async () => {
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(client, { table, partitions: 1, maxFileRows: 7_000, outDir: 'batched-rows' }, { taskQueue });
      const manifest = await waitForManifest(handle);
      assert.equal(manifest.strategy, 'whole_copy');
      assert.deepEqual(
        manifest.files.map((f) => f.rows),
        [7_000, 7_000, 6_000],
      );
      assertOrdered(manifest, '.csv');
      assert.ok(manifest.extractionReceipt!.extractionCompletedAt, 'complete after the terminal empty batch');
      assert.deepEqual(await manifestDigest(table, manifest), expected, 'each file has its header; exact rows');
      const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
      assert.equal(receipt.outcome, 'abort');
      assert.equal(receipt.cleanupSucceeded, true);
    });
  });

  it('an empty table in batched files (whole copy and partitions): no file, and the folder the run prepared goes at its end', async () => {
    await admin().query('DROP TABLE IF EXISTS batched.empty; CREATE TABLE batched.empty (id int PRIMARY KEY, v text)');
    await withWorker(async ({ client, taskQueue }) => {
      for (const [partitions, outcome] of [
        [1, 'committed'],
        [2, 'failed'],
      ] as const) {
        const outDir = `batched-empty-${partitions}-${outcome}`;
        const handle = await startExtraction(client, { table: 'batched.empty', partitions, maxFileRows: 1_000, outDir }, { taskQueue });
        const manifest = await waitForManifest(handle);
        assert.deepEqual(manifest.files, []);
        const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome }] });
        assert.equal(receipt.cleanupSucceeded, true);
        // Before, the attempt's folder (its marker) and the run's folder above it were left, whatever the outcome.
        assert.deepEqual(await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []), [], `${partitions} ${outcome}: nothing left`);
      }
    });
  });

  it('a view, or a partitioned table without a NOT NULL key, is refused in batched files with FILE_BOUND_INVALID at its first try (a view failed on ctid five times; a partitioned table came in one file past the bound)', async () => {
    await admin().query(`DROP VIEW IF EXISTS batched.shown; CREATE VIEW batched.shown AS SELECT * FROM ${table};
      DROP TABLE IF EXISTS batched.split; CREATE TABLE batched.split (id int, v text) PARTITION BY RANGE (id);
      CREATE TABLE batched.split_all PARTITION OF batched.split FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
      INSERT INTO batched.split SELECT g, 'v' FROM generate_series(1, 3000) g`);
    try {
      await withWorker(async ({ client, taskQueue }) => {
        for (const [request, why] of [
          [{ table: 'batched.shown', partitions: 1 }, /batched\.shown is a view/],
          [{ table: 'batched.shown', partitions: 2 }, /batched\.shown is a view/],
          [{ table: 'batched.split', partitions: 1 }, /batched\.split is partitioned/],
        ] as const) {
          const handle = await startExtraction(client, { ...request, maxFileRows: 1_000 }, { taskQueue });
          await assert.rejects(handle.result(), (err: unknown) => {
            const failure = JSON.stringify((err as Error).cause);
            assert.match(failure, /FILE_BOUND_INVALID/, failure);
            assert.match(failure, why);
            return true;
          });
          const events = (await handle.fetchHistory()).events ?? [];
          const retried = events.some((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
          assert.ok(!retried, `${JSON.stringify(request)}: not retried`);
        }
      });
    } finally {
      await admin().query('DROP VIEW batched.shown; DROP TABLE batched.split');
    }
  });

  it('a run whose manifest would not fit in one Temporal payload fails with RUN_EXCEEDS_PAYLOAD_LIMIT before any commit decision, its files discarded', async () => {
    await withWorker(async ({ client, taskQueue }) => {
      // Long paths (four nested folders of 250 characters) pass the 2 MB payload limit with 1,000 files, each partition's well within it.
      const outDir = ['a', 'b', 'c', 'd'].map((c) => c.repeat(250)).join('/');
      const handle = await startExtraction(client, { table, partitions: 4, maxFileRows: 20, outDir, commitDeadlineMs: 5000 }, { taskQueue });
      await assert.rejects(handle.result(), (err: unknown) => {
        assert.match(JSON.stringify((err as Error).cause), /RUN_EXCEEDS_PAYLOAD_LIMIT/);
        return true;
      });
      const events = (await handle.fetchHistory()).events ?? [];
      assert.ok(!events.some((e) => e.workflowTaskFailedEventAttributes), 'no workflow task failed');
      const scheduled = events.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
      assert.ok(!scheduled.includes('completeSnapshot'), `refused before the receipt completed: ${scheduled.join(', ')}`);
      assert.equal(scheduled.at(-1), 'releaseOutputs', 'the attempt was discarded');
      const left = await readdir(join(live().outRoot, 'a'.repeat(250)), { recursive: true }).catch(() => []);
      assert.deepEqual(
        left.filter((e) => /\.csv/.test(e)),
        [],
        'no file left',
      );
    });
  });

  it('a row wider than --max-file-bytes is alone in its file; every other file stays within the bound', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS wide CASCADE; CREATE SCHEMA wide; CREATE TABLE wide.t (id int PRIMARY KEY, v text)`);
    await admin().query(`INSERT INTO wide.t SELECT g, CASE WHEN g = 500 THEN repeat('w', 5000) ELSE 'v' || g END FROM generate_series(1, 1000) g`);
    const wideExpected = await tableDigest('SELECT * FROM wide.t');
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(client, { table: 'wide.t', partitions: 2, maxFileBytes: 1024, outDir: 'batched-wide' }, { taskQueue });
      const manifest = await waitForManifest(handle);
      const over = manifest.files.filter((f) => f.bytes > 1024);
      assert.equal(over.length, 1, 'one file over the bound');
      assert.equal(over[0]!.rows, 1, 'holding the one wide row alone');
      assert.deepEqual(await manifestDigest('wide.t', manifest), wideExpected);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('a partition whose session dies mid-way is retried in the same snapshot: its files are rewritten whole, nothing of an earlier try is left', async () => {
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(
        client,
        { table, partitions: 2, maxFileRows: 400, outDir: 'batched-retry', partitionRetry: { maximumAttempts: 3, initialIntervalMs: 2000 } },
        { taskQueue },
      );
      const out = join(live().outRoot, 'batched-retry');
      const batchFiles = async () => (await readdir(out, { recursive: true }).catch(() => [] as string[])).filter((e) => /-batch-\d{5}\.csv$/.test(e));
      // Both partitions mid-way: each is killed and retried, so each retry must sweep what the test leaves for it.
      // (Two files of partition 0 alone once let partition 1 start after the kill and never retry.)
      const started = (files: string[]) => [0, 1].every((p) => files.some((f) => f.includes(`part-000${p}-batch-`)));
      for (const until = Date.now() + 30_000; !started(await batchFiles());) {
        assert.ok(Date.now() < until, 'batch files appear');
        await new Promise((r) => setTimeout(r, 5));
      }
      const killed = await admin().query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg-extract/partition'`);
      assert.equal(killed.rowCount, 2, 'both partitions were mid-way');
      // What a killed try leaves and its retry would not overwrite: a batch past the retry's last, a temp file.
      await new Promise((r) => setTimeout(r, 500));
      const attemptFolder = join(out, handle.firstExecutionRunId, 'attempt-1');
      await writeFile(join(attemptFolder, 'part-0000-batch-09999.csv'), 'stale\n');
      await writeFile(join(attemptFolder, 'part-0001-batch-00000.csv.tmp-999999-deadbeef'), 'partial');
      const manifest = await waitForManifest(handle);
      assert.equal(manifest.attempt, 1, 'retried within the snapshot, not a fresh attempt');
      assertOrdered(manifest, '.csv');
      assert.deepEqual(await manifestDigest(table, manifest), expected, 'exact rows');
      await assertOnlyListedFiles(manifest);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('to S3, binary, --max-file-rows 3000 and --max-file-bytes 1MB: exact rows; retain keeps exactly the listed objects, no upload left', async () => {
    const s3 = await s3Service();
    await s3.createBucket(BUCKET);
    await withWorker(
      async ({ client, taskQueue }) => {
        const handle = await startExtraction(
          client,
          { table, partitions: 2, format: 'binary', maxFileRows: 3_000, maxFileBytes: '1MB', outDir: `s3://${BUCKET}/runs` },
          { taskQueue },
        );
        const manifest = await waitForManifest(handle);
        assert.ok(manifest.files.every((f) => f.rows <= 3_000 && f.bytes <= 1e6 && f.etag));
        assertOrdered(manifest, '.pgcopy');
        const local = await download(
          manifest.files.map((f) => f.path),
          await mkdtemp(join(live().scratch, 'batched-')),
        );
        assert.deepEqual(await filesDigest(table, local, { format: 'binary', header: false }), expected, 'exact rows');
        const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'unknown' }] });
        assert.equal(receipt.outcome, 'retain_commit_unknown');
        const left = await bucketContents(BUCKET, 'runs/');
        assert.deepEqual(left.uploads, []);
        assert.deepEqual(
          left.objects.sort(),
          runOutputs(manifest)
            .map((p) => p.slice(`s3://${BUCKET}/`.length))
            .sort(),
        );
      },
      { s3Env: (await s3Service()).env },
    );
  });

  it('pg-extract start --max-file-rows from the CLI writes bounded batch files', async () => {
    await withWorker(async ({ taskQueue }) => {
      const env = liveCliEnv(taskQueue);
      const doc = await cliJson(
        ['start', '--table', table, '--partitions', '2', '--max-file-rows', '4000', '--max-file-bytes', '1MiB', '--wait', '--json'],
        env,
      );
      assert.ok(doc.files.length >= 6);
      for (const f of doc.files) {
        assert.match(f.path, /\/part-000[01]-batch-\d{5}\.csv$/);
        assert.ok(f.rows <= 4_000 && f.bytes <= 2 ** 20);
      }
      assert.deepEqual(
        await filesDigest(
          table,
          doc.files.map((f: { path: string }) => f.path),
        ),
        expected,
      );
      const committed = await cli(['commit', doc.workflowId, '--outcome', 'committed', '--json'], env);
      assert.equal(JSON.parse(committed.stdout).cleanupSucceeded, true);
    });
  });
});

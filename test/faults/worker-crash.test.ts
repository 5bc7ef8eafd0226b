/**
 * SIGKILL of the worker process at seeded random points of an extraction. Every run must end
 * with exact rows and checksum (no duplicate, no missing row), no temp file and no session left.
 * FAULT_RUNS (default 10) sets the number of runs, FAULT_SEED the seed.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Client as PgClient } from 'pg';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate, statusQuery } from '../../src/contract/definitions';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { admin, filesDigest, manifestDigest, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';
import { type WorkerProcess, spawnWorker } from '../support/worker-process';
import { eventually } from '../support/eventually';
import { bucketContents, gatedS3Proxy, s3Service } from '../support/s3';

const RELEASE_BUCKET = 'pgx-crash-release';

const RUNS = Number(process.env.FAULT_RUNS ?? 10);
const SEED = Number(process.env.FAULT_SEED ?? 20261202);

/** mulberry32: a small seeded PRNG, so a failing run can be replayed with its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function tempFilesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  return entries.filter((e) => /\.tmp-\d+-[0-9a-f]{8}$/.test(e));
}

describe('worker process killed mid-extraction (live)', function () {
  this.timeout(120_000);
  let table: string;
  let expected: { count: number; md5: string };
  const random = prng(SEED);
  const workers: WorkerProcess[] = [];

  before(async () => {
    table = await seedMixedTable('crash', 80_000);
    expected = await tableDigest(`SELECT * FROM ${table}`);
  });
  // The runs share a task queue: each run's second worker is the next run's first, killed in its turn.
  const runsQueue = `crash-${randomUUID()}`;
  let standby: WorkerProcess | undefined;
  const killAll = (keep?: WorkerProcess) => {
    for (const w of workers.splice(0)) if (w !== keep && w.child.exitCode === null) w.child.kill('SIGKILL');
    if (keep) workers.push(keep);
  };
  afterEach(function () {
    if (this.currentTest?.state === 'failed') standby = undefined;
    killAll(standby);
  });

  for (let run = 1; run <= RUNS; run++) {
    const delayMs = Math.floor(random() * 600);
    it(`run ${run}/${RUNS} (seed ${SEED}): SIGKILL ${delayMs} ms into the partitions → exact rows, no temp file, no session left`, async () => {
      const taskQueue = runsQueue;
      const first = standby?.child.exitCode === null ? standby : await spawnWorker(taskQueue);
      if (first !== standby) workers.push(first);
      standby = undefined;
      const handle = await startExtraction(
        live().temporal.client,
        { table, partitions: 4, outDir: `crash-${run}`, timeouts: { holderHeartbeatMs: 2000, partitionHeartbeatMs: 2000 } },
        { taskQueue },
      );
      await eventually(async () => (await handle.query(statusQuery)).partitionsTotal > 0, 'the plan was handed out', { intervalMs: 10 });
      await new Promise((r) => setTimeout(r, delayMs));
      first.child.kill('SIGKILL');
      assert.equal(await first.exited, null, 'killed by the signal');
      const second = await spawnWorker(taskQueue);
      workers.push(second);

      const manifest = await waitForManifest(handle);
      assert.deepEqual(await manifestDigest(table, manifest), expected, 'exact rows and checksum');
      assert.ok(
        manifest.files.every((f) => f.snapshotDigest === manifest.snapshotDigest),
        'one snapshot',
      );
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      const result = (await handle.result()) as ExtractionResult;
      assert.equal(result.terminalReceipt.cleanupSucceeded, true);
      assert.deepEqual(await tempFilesUnder(join(live().outRoot, `crash-${run}`)), [], 'no temp file');
      assert.deepEqual(await readdir(join(live().outRoot, `crash-${run}`)).catch(() => []), [], 'nothing left after success');

      if (run === RUNS) {
        second.child.kill('SIGTERM');
        assert.equal(await second.exited, 0, 'SIGTERM shuts the worker down gracefully');
      } else standby = second;
      assert.deepEqual(await settleSessions(10_000), [], 'no session left');
    });
  }

  it('batched files: SIGKILL once a partition has written some of its files → the rewritten files are exact, no orphan', async () => {
    const taskQueue = `crash-${randomUUID()}`;
    const first = await spawnWorker(taskQueue);
    workers.push(first);
    const out = join(live().outRoot, 'crash-batched');
    const handle = await startExtraction(
      live().temporal.client,
      // The holder's loss is seen before the killed partitions time out, and they are not retried:
      // what they wrote can only go with the discarded attempt.
      {
        table,
        partitions: 4,
        maxFileRows: 1_500,
        outDir: 'crash-batched',
        partitionRetry: { maximumAttempts: 1 },
        timeouts: { holderHeartbeatMs: 1000, partitionHeartbeatMs: 4000 },
      },
      { taskQueue },
    );
    const written = async () => (await readdir(out, { recursive: true }).catch(() => [] as string[])).filter((e) => /-batch-\d{5}\.csv$/.test(e));
    for (const until = Date.now() + 30_000; (await written()).length < 3;) {
      assert.ok(Date.now() < until, 'batch files appear');
      await new Promise((r) => setTimeout(r, 5));
    }
    first.child.kill('SIGKILL');
    assert.equal(await first.exited, null, 'killed by the signal');
    const second = await spawnWorker(taskQueue);
    workers.push(second);

    const manifest = await waitForManifest(handle);
    assert.ok(manifest.files.every((f) => f.rows <= 1_500));
    assert.deepEqual(await manifestDigest(table, manifest), expected, 'exact rows and checksum');
    const listed = [...manifest.files.map((f) => f.path), manifest.dataPackage!.path].map((p) => p.slice(out.length + 1)).sort();
    const present = (await readdir(out, { recursive: true })).filter((e) => !(e.endsWith('.pg-extract-run') || /^[^/]+(\/attempt-\d+)?$/.test(e)));
    assert.deepEqual(present.sort(), listed, 'the folder holds exactly the listed files: no file of the killed try, no temp file, no discarded folder');
    await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    const result = (await handle.result()) as ExtractionResult;
    assert.equal(result.terminalReceipt.cleanupSucceeded, true);
    assert.ok(
      result.attempts.every((a) => a.cleanupErrorCode === null),
      'every discarded attempt was cleaned',
    );
    assert.deepEqual(await readdir(out).catch(() => []), [], 'nothing left after success');
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
    assert.deepEqual(await settleSessions(10_000), [], 'no session left');
  });
  it('table groups: SIGKILL of the worker copying a group, not holding the snapshot → the group is retried, rewrites its files whole; exact rows, no orphan', async () => {
    const TABLES = 24;
    await admin().query(`DROP SCHEMA IF EXISTS tcrash CASCADE; CREATE SCHEMA tcrash;
      DO $$ BEGIN FOR i IN 1..${TABLES} LOOP
        EXECUTE format('CREATE TABLE tcrash.%I (id int PRIMARY KEY, v text)', 't' || i);
        EXECUTE format('INSERT INTO tcrash.%I SELECT g, md5(g::text) FROM generate_series(1, 100000) g', 't' || i);
      END LOOP; END $$`);
    const out = join(live().outRoot, 'crash-groups');
    const taskQueue = `crash-${randomUUID()}`;
    try {
      // One copy at a time on each: the two workers share the groups (about 8 tables each).
      for (let i = 0; i < 2; i++) workers.push(await spawnWorker(taskQueue, { PG_EXTRACT_MAX_CONCURRENT_ACTIVITIES: '1' }));
      const client = live().temporal.client;
      const handle = await startExtraction(
        client,
        { schema: 'tcrash', maxInFlight: 2, outDir: 'crash-groups', timeouts: { partitionHeartbeatMs: 2000 } },
        { taskQueue },
      );
      const runningOn = (pending: { activityType?: { name?: string | null } | null; lastWorkerIdentity?: string | null }[] | null | undefined, name: string) =>
        workers.find((w) => pending?.some((a) => a.activityType?.name === name && a.lastWorkerIdentity?.startsWith(`${w.child.pid}@`)));
      const holder = await eventually(async () => runningOn((await handle.describe()).raw.pendingActivities, 'holdSnapshot'), 'a worker holds the snapshot');
      const victim = workers.find((w) => w !== holder)!;
      const { runId } = await handle.describe();
      const batch = client.workflow.getHandle(`${handle.workflowId}/${runId}/attempt-1/batch-0`);
      await eventually(async () => (await batch.describe().catch(() => null)) !== null, 'the set is planned and its batch started');
      // An ACCESS EXCLUSIVE request queued on every table (behind the snapshot's own ACCESS SHARE, so
      // never granted) stops each group at its next table: the victim is surely inside a group when
      // it is killed, however fast small tables copy. Cancelled once it is dead.
      const blockers = await Promise.all(
        Array.from({ length: TABLES }, async (_, i) => {
          const blocker = new PgClient({ connectionString: live().pg.url, application_name: 'pg-extract-test' });
          await blocker.connect();
          const pid = (await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
          await blocker.query('BEGIN');
          return { blocker, pid, waiting: blocker.query(`LOCK TABLE tcrash.t${i + 1} IN ACCESS EXCLUSIVE MODE`).catch(() => undefined) };
        }),
      );
      await eventually(async () => {
        const pending = (await batch.describe()).raw.pendingActivities;
        return pending?.some((a) => a.activityType?.name === 'copyTables' && a.lastWorkerIdentity?.startsWith(`${victim.child.pid}@`)) === true;
      }, 'the other worker copies a group');
      victim.child.kill('SIGKILL');
      assert.equal(await victim.exited, null, 'killed by the signal');
      for (const { blocker, pid, waiting } of blockers) {
        await admin().query('SELECT pg_cancel_backend($1)', [pid]);
        await waiting;
        await blocker.end();
      }

      const manifest = await waitForManifest(handle);
      assert.equal(manifest.attempt, 1, 'the holder survived: the same attempt, the group retried');
      assert.equal(manifest.files.length, TABLES);
      for (let i = 1; i <= TABLES; i++) {
        const files = manifest.files.filter((f) => f.table === `tcrash.t${i}`).map((f) => f.path);
        assert.deepEqual(await filesDigest(`tcrash.t${i}`, files), await tableDigest(`SELECT * FROM tcrash.t${i}`), `tcrash.t${i}`);
      }
      const retried = ((await batch.fetchHistory()).events ?? []).filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
      assert.equal(retried.length, 1, 'the killed group ran again');
      const listed = [...manifest.files.map((f) => f.path), ...(manifest.dataPackage ? [manifest.dataPackage.path] : [])].map((p) => p.slice(out.length + 1));
      const present = (await readdir(out, { recursive: true })).filter((e) => !(e.endsWith('.pg-extract-run') || /^[^/]+(\/attempt-\d+)?$/.test(e)));
      assert.deepEqual(present.sort(), listed.sort(), 'the folder holds exactly the listed files: no temp file of the killed try');
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      const result = (await handle.result()) as ExtractionResult;
      assert.equal(result.terminalReceipt.cleanupSucceeded, true);
      assert.deepEqual(await readdir(out).catch(() => []), [], 'nothing left after success');
      holder.child.kill('SIGTERM');
      assert.equal(await holder.exited, 0);
      assert.deepEqual(await settleSessions(10_000), [], 'no session left');
    } finally {
      await admin().query('DROP SCHEMA IF EXISTS tcrash CASCADE');
    }
  });

  it('SIGKILL while the terminal release deletes its objects (an S3 DELETE held) → another worker releases them within the heartbeat timeout, not the 5-minute start-to-close', async () => {
    const s3 = await s3Service();
    await s3.createBucket(RELEASE_BUCKET);
    const gate = await gatedS3Proxy('DELETE', /./);
    const taskQueue = `crash-${randomUUID()}`;
    const prefix = `release-${randomUUID()}`;
    try {
      const first = await spawnWorker(taskQueue, { ...s3.env, AWS_ENDPOINT_URL_S3: gate.url });
      workers.push(first);
      const handle = await startExtraction(live().temporal.client, { table, partitions: 2, outDir: `s3://${RELEASE_BUCKET}/${prefix}` }, { taskQueue });
      await waitForManifest(handle);
      const decided = handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await gate.held;
      first.child.kill('SIGKILL');
      assert.equal(await first.exited, null, 'killed by the signal');
      workers.push(await spawnWorker(taskQueue, s3.env));
      // Without a heartbeat the release was retried only after its 5-minute start-to-close: past this test's timeout.
      const receipt = await decided;
      assert.deepEqual([receipt.outcome, receipt.cleanupSucceeded], ['success', true]);
      assert.deepEqual(await bucketContents(RELEASE_BUCKET, `${prefix}/`), { objects: [], uploads: [] });
      assert.deepEqual(await settleSessions(10_000), [], 'no session left');
    } finally {
      await gate.close();
    }
  });
});

/**
 * The workflow's side of the source guards (live Temporal + PostgreSQL): `timeouts.lockTimeoutMs`
 * bounds how long a run waits for its table lock, and every copyPartition call carries the plan's
 * snapshot digest and source identity for the partition to prove.
 */
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { admin, lockAfterCoordinator, nonBytewiseCollation, seedMixedTable, settleSessions, withMigrationGate } from '../support/database';
import { eventually } from '../support/eventually';
import { live } from '../support/services';
import { withWorker } from '../support/worker';
import { failureChain } from '../support/failure-chain';
import { onTarget, recreateTarget, targetUrl } from '../target/target-db';

describe('source guards in the workflow (live Temporal + PostgreSQL)', function () {
  this.timeout(120_000);
  let table: string;

  before(async () => {
    table = await seedMixedTable('sg', 2_000);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('a table held ACCESS EXCLUSIVE fails the run with LOCK_TIMEOUT after timeouts.lockTimeoutMs, naming the holder (partitions, a whole copy, batched files)', async () => {
    const holder = await admin().connect();
    try {
      const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await holder.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      await withWorker(async ({ taskQueue }) => {
        // A one-session copy waited for the holder for as long as it held the lock. Its LOCK_TIMEOUT is
        // retried (partitionRetry, README); two quick tries keep the test short.
        const partitionRetry = { maximumAttempts: 2, initialIntervalMs: 100 };
        for (const request of [{ partitions: 2 }, { partitions: 1 }, { partitions: 1, maxFileRows: 10_000 }]) {
          const started = Date.now();
          const handle = await startExtraction(live().temporal.client, { table, ...request, partitionRetry, timeouts: { lockTimeoutMs: 500 } }, { taskQueue });
          await assert.rejects(handle.result(), (err: unknown) => {
            assert.ok(err instanceof WorkflowFailedError);
            const failure = JSON.stringify(err.cause);
            assert.match(failure, /LOCK_TIMEOUT/);
            assert.match(failure, new RegExp(`pid ${pid}\\b`));
            return true;
          });
          assert.ok(Date.now() - started < 30_000, `${JSON.stringify(request)}: the run did not wait for the lock holder`);
        }
      });
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  /**
   * Runs `request` while a migration asks ACCESS EXCLUSIVE on the table after the run's holder locked it, and checks the
   * attempt gave way: its holder let go at once (a holder that heard of it only at its next heartbeat, 0.8 × 60 s here,
   * kept the migration waiting that long), the migration went through and a fresh snapshot completed. Resolves to the
   * run's history and the migration's pid.
   */
  async function givesWay(request: ExtractionRequest): Promise<{ events: temporal.api.history.v1.IHistoryEvent[]; pid: number }> {
    let seen!: { events: temporal.api.history.v1.IHistoryEvent[]; pid: number };
    await withMigrationGate(async ({ sourceUrl, migration, open }) => {
      await withWorker(
        async ({ taskQueue }) => {
          const holderHeartbeatMs = 60_000;
          const handle = await startExtraction(live().temporal.client, { ...request, timeouts: { lockTimeoutMs: 1000, holderHeartbeatMs } }, { taskQueue });
          const { pid, locked } = await lockAfterCoordinator(migration, table);
          const opened = Date.now();
          open();
          await locked;
          const waited = Date.now() - opened;
          assert.ok(waited < holderHeartbeatMs / 3, `the migration got its lock ${waited} ms after the copies asked, not at the holder's next heartbeat`);
          await migration.query('COMMIT');
          await waitForManifest(handle);
          await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
          const result: ExtractionResult = await handle.result();
          assert.equal(result.terminalReceipt.outcome, 'success');
          assert.deepEqual(
            result.attempts.map((a) => [a.attempt, a.result]),
            [
              [1, 'snapshot_lost'],
              [2, 'completed'],
            ],
          );
          const events = (await handle.fetchHistory()).events ?? [];
          const released = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'releaseSnapshot');
          assert.equal(released.length, 1, 'the first attempt asked its holder to let go');
          seen = { events, pid };
        },
        { sourceUrl },
      );
    });
    return seen;
  }

  it('ACCESS EXCLUSIVE asked for after the holder locked the table (a migration) queues the partitions behind it: after one lock timeout the attempt gives way (SNAPSHOT_LOST, saying the migration waits for the run), its holder lets go at once, the migration goes through, and a fresh snapshot reads the table after it', async () => {
    // Each partition retried its LOCK_TIMEOUT behind the same queue (5 tries by default), then the run failed.
    const { events, pid } = await givesWay({ table, partitions: 2 });
    const failures = events.map((e) => e.activityTaskFailedEventAttributes?.failure).filter((f) => f !== undefined && f !== null);
    // It read as a wait of the migration's own; pg_dump says it waits for the dump.
    const gaveWay = new RegExp(`pid ${pid}\\b.*waits for AccessExclusiveLock.*it waits for the run, as the run waits for it; the attempt gives way`);
    assert.ok(
      failures.some((f) => gaveWay.test(JSON.stringify(f))),
      'a partition gave way',
    );
    for (const f of failures) {
      // The other partition timed out at about the same moment: the holder, let go at once, and the migration, committed
      // at once, may both be gone by the time it reads who blocked it.
      const text = JSON.stringify(f);
      const lateToTheQueue = f.applicationFailureInfo?.type === 'LOCK_TIMEOUT' && text.includes('no conflicting lock is left (its holder let go)');
      assert.ok(gaveWay.test(text) || lateToTheQueue, text);
    }
    const retried = events.filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
    assert.deepEqual(retried, [], 'no step was tried again behind the queue');
  });

  it("a set's table group gives way to such a migration too, from its batch workflow: its holder lets go at once", async () => {
    await givesWay({ schema: table.split('.')[0]! });
  });

  it('a run cancelled while it waits for its table lock stops waiting at once: its sessions end and its locks requests are withdrawn (a held snapshot, a whole copy, a set)', async () => {
    const holder = await admin().connect();
    try {
      await holder.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      await withWorker(async ({ taskQueue }) => {
        const [schema] = table.split('.');
        for (const request of [{ table, partitions: 2 }, { table, partitions: 1 }, { schema: schema! }] satisfies ExtractionRequest[]) {
          const handle = await startExtraction(
            live().temporal.client,
            { ...request, timeouts: { lockTimeoutMs: 60_000, partitionHeartbeatMs: 2000 } },
            { taskQueue },
          );
          const waiting = async (): Promise<boolean> =>
            (await admin().query(`SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'pg-extract/%' AND wait_event_type = 'Lock'`)).rowCount! > 0;
          await eventually(waiting, 'the run waits for the lock');
          const cancelled = Date.now();
          await handle.cancel();
          await assert.rejects(handle.result(), WorkflowFailedError);
          assert.deepEqual(await settleSessions(10_000), [], `${JSON.stringify(request)}: no session of ours is left`);
          const stopped = Date.now() - cancelled;
          assert.ok(stopped < 10_000, `${JSON.stringify(request)}: the run stopped ${stopped} ms after its cancel, not at its lock timeout`);
        }
      });
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it("every copyPartition call carries the plan's snapshot digest and source identity", async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { table, partitions: 2 }, { taskQueue });
      const manifest = await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      const identity = await admin().query<{ system: string; db: string }>(
        `SELECT (SELECT system_identifier::text FROM pg_control_system()) AS system, (SELECT oid::int8::text FROM pg_database WHERE datname = current_database()) AS db`,
      );
      const requests = ((await handle.fetchHistory()).events ?? [])
        .map((e) => e.activityTaskScheduledEventAttributes)
        .filter((a) => a?.activityType?.name === 'copyPartition')
        .map((a) => JSON.parse(Buffer.from(a!.input!.payloads![0]!.data!).toString('utf8')));
      assert.equal(requests.length, 2);
      for (const r of requests) {
        assert.equal(r.snapshotDigest, manifest.snapshotDigest);
        assert.deepEqual(r.source, { systemIdentifier: identity.rows[0]!.system, databaseOid: Number(identity.rows[0]!.db) });
      }
    });
  });

  /**
   * Runs `request` while another session holds the table ACCESS EXCLUSIVE with `change` done and not
   * yet committed; commits it once the run waits for its lock (the holder, its snapshot taken; a
   * whole copy, before its snapshot). Returns the manifest's rows and the attempts' results.
   */
  async function changedWhileLocking(change: string, request: Omit<ExtractionRequest, 'source'>): Promise<{ rows: number; attempts: string[] }> {
    const other = await admin().connect();
    try {
      await other.query(`BEGIN; LOCK TABLE sgr.t IN ACCESS EXCLUSIVE MODE; ${change}`);
      return await withWorker(
        async ({ taskQueue }) => {
          const handle = await startExtraction(live().temporal.client, request, { taskQueue });
          const holderWaits = async () =>
            (await admin().query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'pg-extract/%' AND wait_event_type = 'Lock'`))
              .rows[0].n === 1;
          await eventually(holderWaits, 'the holder waiting for its lock');
          await other.query('COMMIT');
          // A run with a target is its own target owner; others wait for the commit report.
          if (!request.target) {
            await waitForManifest(handle);
            await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
          }
          const result = (await handle.result()) as ExtractionResult;
          assert.equal(result.terminalReceipt.outcome, 'success', JSON.stringify(result.load));
          return { rows: result.manifest.totals.rows, attempts: result.attempts.map((a) => a.result) };
        },
        { targets: { warehouse: targetUrl() } },
      );
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      other.release();
    }
  }

  it('a TRUNCATE and reload, a rewriting ALTER TABLE or a swap of names, committed after the snapshot and before its lock: a fresh snapshot reads the table as it is then (one table, a schema, a view, a partition attached or detached, a stream)', async () => {
    // Before, the snapshot read the table's new file: the reloaded table's rows were after it and the rewritten table's
    // tuples new, so both exported 0 of the snapshot's 900 rows, and the run succeeded.
    const seed = () =>
      admin().query(`DROP SCHEMA IF EXISTS sgr CASCADE; CREATE SCHEMA sgr;
        CREATE TABLE sgr.t (id int PRIMARY KEY, v int); INSERT INTO sgr.t SELECT g, g FROM generate_series(1, 900) g`);
    for (const request of [{ table: 'sgr.t', partitions: 2 }, { schema: 'sgr' }]) {
      await seed();
      const reload = await changedWhileLocking('TRUNCATE sgr.t; INSERT INTO sgr.t SELECT g, g FROM generate_series(1, 50) g', request);
      assert.deepEqual(reload, { rows: 50, attempts: ['snapshot_lost', 'completed'] }, JSON.stringify(request));
      await seed();
      const rewrite = await changedWhileLocking('ALTER TABLE sgr.t ALTER v TYPE bigint', request);
      assert.deepEqual(rewrite, { rows: 900, attempts: ['snapshot_lost', 'completed'] }, JSON.stringify(request));
      // With one snapshot allowed, the run ends there and says why.
      await seed();
      const once = { ...request, maxSnapshotAttempts: 1 };
      await assert.rejects(changedWhileLocking('TRUNCATE sgr.t; INSERT INTO sgr.t SELECT g, g FROM generate_series(1, 50) g', once), (err: unknown) => {
        const chain = failureChain(err);
        return /ATTEMPTS_EXHAUSTED: the snapshot was lost once \(the last time, SNAPSHOT_LOST: sgr\.t changed after the snapshot was taken, before it was locked/.test(
          chain,
        );
      });
      // A change that leaves the file (rows added) is read as MVCC reads it: the snapshot's 900, in one attempt.
      await seed();
      const insert = await changedWhileLocking('INSERT INTO sgr.t SELECT g, g FROM generate_series(901, 1000) g', request);
      assert.deepEqual(insert, { rows: 900, attempts: ['completed'] }, JSON.stringify(request));
    }
    // A whole copy locks before its snapshot, so the snapshot comes after the change (it came before, and read 0 rows).
    await seed();
    const whole = await changedWhileLocking('TRUNCATE sgr.t; INSERT INTO sgr.t SELECT g, g FROM generate_series(1, 50) g', { table: 'sgr.t', partitions: 1 });
    assert.deepEqual(whole, { rows: 50, attempts: ['completed'] });
    // A swap of names: the lock takes another table under the name (its file unchanged); the snapshot read it as the table.
    await seed();
    await admin().query('CREATE TABLE sgr.t_new (id int PRIMARY KEY, v int); INSERT INTO sgr.t_new SELECT g, g FROM generate_series(1, 30) g');
    const swap = await changedWhileLocking('ALTER TABLE sgr.t RENAME TO t_old; ALTER TABLE sgr.t_new RENAME TO t', { table: 'sgr.t', partitions: 2 });
    assert.deepEqual(swap, { rows: 30, attempts: ['snapshot_lost', 'completed'] });
    // A view's table: the view locks it, and its file is checked as a named table's is (the view exported 0 rows).
    await seed();
    await admin().query('CREATE VIEW sgr.v AS SELECT id, v FROM sgr.t WHERE v > 0');
    const viewed = await changedWhileLocking('TRUNCATE sgr.t; INSERT INTO sgr.t SELECT g, g FROM generate_series(1, 50) g', { tables: ['sgr.v'] });
    assert.deepEqual(viewed, { rows: 50, attempts: ['snapshot_lost', 'completed'] });
    // A partition detached or attached: the snapshot would read the partitions as they are now (one fewer, one more).
    await admin().query(`DROP SCHEMA sgr CASCADE; CREATE SCHEMA sgr;
      CREATE TABLE sgr.t (id int PRIMARY KEY, v int) PARTITION BY RANGE (id);
      CREATE TABLE sgr.t1 PARTITION OF sgr.t FOR VALUES FROM (0) TO (500); CREATE TABLE sgr.t2 PARTITION OF sgr.t FOR VALUES FROM (500) TO (1000);
      INSERT INTO sgr.t SELECT g, g FROM generate_series(1, 900) g;
      CREATE TABLE sgr.t3 (id int PRIMARY KEY, v int); INSERT INTO sgr.t3 SELECT g, g FROM generate_series(1000, 1049) g`);
    const attached = await changedWhileLocking('ALTER TABLE sgr.t ATTACH PARTITION sgr.t3 FOR VALUES FROM (1000) TO (2000)', { table: 'sgr.t', partitions: 2 });
    assert.deepEqual(attached, { rows: 950, attempts: ['snapshot_lost', 'completed'] });
    const detached = await changedWhileLocking('ALTER TABLE sgr.t DETACH PARTITION sgr.t2', { schema: 'sgr', include: ['t'] });
    assert.deepEqual(detached, { rows: 549, attempts: ['snapshot_lost', 'completed'] });
    // A stream's load, one attempt of the run, takes its snapshot again within it (it aborted with SNAPSHOT_LOST).
    await seed();
    await recreateTarget('CREATE SCHEMA dst; CREATE TABLE dst.t (id int PRIMARY KEY, v int)');
    const target = { name: 'warehouse', table: 'dst.t', via: 'stream' } as const;
    const streamed = await changedWhileLocking('TRUNCATE sgr.t; INSERT INTO sgr.t SELECT g, g FROM generate_series(1, 50) g', {
      table: 'sgr.t',
      partitions: 2,
      target,
    });
    assert.deepEqual(streamed, { rows: 50, attempts: ['completed'] });
    assert.equal(await onTarget(async (c) => (await c.query('SELECT count(*)::int AS n FROM dst.t')).rows[0].n), 50);
    await admin().query('DROP SCHEMA sgr CASCADE');
  });

  it("a swap of two columns' names, a column dropped and added again, or a text key's collation changed in place, committed after the snapshot and before its lock: a fresh snapshot for the names; for the collation, cuts sorted under the one the plan records (every row once)", async () => {
    const seed = (key: string) =>
      // A NOT NULL domain too: the check reads the row type's columns, never a value of it.
      admin().query(`DROP SCHEMA IF EXISTS sgr CASCADE; CREATE SCHEMA sgr; CREATE DOMAIN sgr.present AS int NOT NULL;
        CREATE TABLE sgr.t (k ${key} PRIMARY KEY, a text, b text, n sgr.present);
        INSERT INTO sgr.t SELECT chr(CASE WHEN g % 2 = 0 THEN 65 ELSE 97 END + g % 26) || g, 'a' || g, 'b' || g, g
          FROM generate_series(1, 900) g`);
    // Read under the old names, a's values would be written as b's and b's as a's, in one attempt.
    await seed('text');
    const swapped = await changedWhileLocking('ALTER TABLE sgr.t RENAME a TO x; ALTER TABLE sgr.t RENAME b TO a; ALTER TABLE sgr.t RENAME x TO b', {
      table: 'sgr.t',
      partitions: 2,
    });
    assert.deepEqual(swapped, { rows: 900, attempts: ['snapshot_lost', 'completed'] });
    // The last column dropped and added again under its name: the names in their order match, and every row read its
    // value as the new column's (NULL).
    for (const request of [{ table: 'sgr.t', partitions: 2 }, { schema: 'sgr' }]) {
      await seed('text');
      const readded = await changedWhileLocking('ALTER TABLE sgr.t DROP COLUMN n; ALTER TABLE sgr.t ADD COLUMN n int', request);
      assert.deepEqual(readded, { rows: 900, attempts: ['snapshot_lost', 'completed'] }, JSON.stringify(request));
    }
    // Upper and lower case keys: "C" puts every upper case one first, the other collation mixes them. The cuts were
    // sorted under "C" and compared under the snapshot's collation: ranges that overlapped, and rows copied twice.
    await seed(`text COLLATE ${await nonBytewiseCollation()}`);
    const recollated = await changedWhileLocking('ALTER TABLE sgr.t ALTER k TYPE text COLLATE "C"', { table: 'sgr.t', partitions: 3 });
    assert.deepEqual(recollated, { rows: 900, attempts: ['completed'] });
    await admin().query('DROP SCHEMA sgr CASCADE');
  });

  it('a partition attached while the table is read (ATTACH does not wait for ACCESS SHARE): found before the receipt completes, and a fresh snapshot reads the table with it (partitions, batched files; a whole copy started before it did not read it)', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS sgr CASCADE; CREATE SCHEMA sgr;
      CREATE TABLE sgr.t (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
      CREATE TABLE sgr.t1 PARTITION OF sgr.t FOR VALUES FROM (0) TO (200000); CREATE TABLE sgr.t2 PARTITION OF sgr.t FOR VALUES FROM (200000) TO (400000);
      INSERT INTO sgr.t SELECT g, repeat('v', 100) FROM generate_series(1, 300000) g; ANALYZE sgr.t`);
    try {
      for (const [request, read] of [
        [{ table: 'sgr.t', partitions: 2 }, 'again'],
        // One COPY took its partitions when it started, before the ATTACH: read as the snapshot saw it, in one attempt.
        [{ table: 'sgr.t', partitions: 1 }, 'once'],
        // Each batch is a read planned afresh: one after the ATTACH takes the new partition.
        [{ table: 'sgr.t', partitions: 1, maxFileRows: 60_000 }, 'again'],
      ] satisfies [Omit<ExtractionRequest, 'source'>, 'once' | 'again'][]) {
        await admin().query(`DROP TABLE IF EXISTS sgr.t3;
          CREATE TABLE sgr.t3 (id int PRIMARY KEY, v text); INSERT INTO sgr.t3 SELECT g, 'v' FROM generate_series(400000, 400049) g`);
        const result = await withWorker(async ({ taskQueue }) => {
          const handle = await startExtraction(live().temporal.client, request, { taskQueue });
          const copying = async () =>
            (await admin().query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'pg-extract/%' AND query LIKE 'COPY%sgr%'`))
              .rows[0].n > 0;
          await eventually(copying, 'a copy running', { timeoutMs: 30_000, intervalMs: 5 });
          await admin().query('ALTER TABLE sgr.t ATTACH PARTITION sgr.t3 FOR VALUES FROM (400000) TO (500000)');
          await waitForManifest(handle);
          await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
          return (await handle.result()) as ExtractionResult;
        });
        const expected =
          read === 'once'
            ? { rows: 300_000, attempts: [['completed', null]] }
            : {
                rows: 300_050,
                attempts: [
                  ['snapshot_lost', 'SNAPSHOT_LOST'],
                  ['completed', null],
                ],
              };
        assert.deepEqual({ rows: result.manifest.totals.rows, attempts: result.attempts.map((a) => [a.result, a.reason]) }, expected, JSON.stringify(request));
        await admin().query('ALTER TABLE sgr.t DETACH PARTITION sgr.t3');
      }
    } finally {
      await admin().query('DROP SCHEMA sgr CASCADE');
    }
  });
});

/**
 * Table locks of a partitioned export (live PostgreSQL): the coordinator holds ACCESS SHARE from
 * right after the export, so TRUNCATE cannot run under it; a lock it or a partition cannot get
 * within lock_timeout fails with LOCK_TIMEOUT naming the blocker instead of waiting forever.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Client, PoolClient } from 'pg';
import { ErrorCode } from '../../src/errors';
import { copyPartition } from '../../src/postgres/partition-copy';
import { closeSession, openSession } from '../../src/postgres/session';
import { SnapshotCoordinator } from '../../src/postgres/snapshot-coordinator';
import { lockTimeoutError, maskQuery } from '../../src/postgres/lock-blockers';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';
import { LocalFileSink } from '../../src/storage/local-file-sink';
import { eventually } from '../support/eventually';

const csv = { format: 'csv' as const, header: true, gzip: false };

/** Rejects when `work` has not settled within `ms`, so a lock wait that never ends fails the test instead of hanging it. */
function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

async function pidOf(client: PoolClient): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
}

/**
 * Runs `work` with a fresh coordinator session while another session (pid `holderPid`) holds
 * ACCESS EXCLUSIVE on `tables`; the holder rolls back and both sessions close however it ends.
 */
async function whileHeldExclusive(tables: string[], work: (holderPid: number, client: Client) => Promise<void>): Promise<void> {
  const holder = await admin().connect();
  const client = await openSession(live().pg.url, 'coordinator');
  try {
    const pid = await pidOf(holder);
    // The holder's last query, which a LOCK_TIMEOUT names.
    await holder.query(`BEGIN; ${tables.map((t) => `LOCK TABLE ${t} IN ACCESS EXCLUSIVE MODE`).join('; ')}`);
    await work(pid, client);
  } finally {
    await holder.query('ROLLBACK');
    holder.release();
    await closeSession(client);
  }
}

describe('table locks of a partitioned export (live PostgreSQL)', () => {
  before(async () => {
    await admin().query(`DROP SCHEMA IF EXISTS lk CASCADE; CREATE SCHEMA lk`);
    // No key: the ctid path, which reads the table's size but no rows while planning.
    await admin().query(`CREATE TABLE lk.pages (v text); INSERT INTO lk.pages SELECT repeat('x', 200) || g FROM generate_series(1, 3000) g`);
    await admin().query(`CREATE TABLE lk.keyed (id int PRIMARY KEY, v text); INSERT INTO lk.keyed SELECT g, 'v' || g FROM generate_series(1, 3000) g`);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  for (const table of ['pages', 'keyed']) {
    it(`the coordinator holds ACCESS SHARE on lk.${table} once planned, so TRUNCATE cannot run under the export`, async () => {
      const client = await openSession(live().pg.url, 'coordinator');
      try {
        const c = await SnapshotCoordinator.export(client, { schema: 'lk', table }, { partitions: 2 });
        const held = await admin().query(`SELECT mode FROM pg_locks WHERE pid = $1 AND locktype = 'relation' AND relation = $2::regclass AND granted`, [
          c.plan.coordinatorPid,
          `lk.${table}`,
        ]);
        assert.deepEqual(
          held.rows.map((r) => r.mode),
          ['AccessShareLock'],
        );
        const truncator = await admin().connect();
        try {
          await truncator.query(`SET lock_timeout = '300ms'`);
          await assert.rejects(truncator.query(`TRUNCATE lk.${table}`), { code: '55P03' });
        } finally {
          await truncator.query('RESET lock_timeout');
          truncator.release();
        }
        await c.abort();
      } finally {
        await closeSession(client);
      }
    });
  }

  it('a session holding ACCESS EXCLUSIVE makes the coordinator fail with LOCK_TIMEOUT naming it, within the timeout', async () => {
    await whileHeldExclusive(['lk.pages'], async (pid, client) => {
      const started = Date.now();
      const exporting = SnapshotCoordinator.export(client, { schema: 'lk', table: 'pages' }, { partitions: 2 }, { lockTimeoutMs: 500 });
      await assert.rejects(within(10_000, exporting), (err: Error & { code?: string }) => {
        assert.equal(err.code, ErrorCode.LOCK_TIMEOUT);
        assert.match(err.message, new RegExp(`pid ${pid}\\b`));
        assert.match(err.message, /pg-extract-test/);
        assert.match(err.message, /AccessExclusiveLock/);
        assert.match(err.message, /LOCK TABLE lk\.pages IN ACCESS EXCLUSIVE MODE/);
        return true;
      });
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 450 && elapsed < 5_000, `failed after ${elapsed} ms`);
      const coordinatorPid = (client as unknown as { processID: number }).processID;
      const coordinator = await admin().query(`SELECT xact_start IS NOT NULL AS in_tx FROM pg_stat_activity WHERE pid = $1`, [coordinatorPid]);
      assert.equal(coordinator.rows[0].in_tx, false, 'the coordinator rolled back');
    });
  });

  it("a set: the coordinator holds ACCESS SHARE on every table, a view's tables and a materialized view once planned", async () => {
    await admin().query(`CREATE OR REPLACE VIEW lk.keyed_view AS SELECT * FROM lk.keyed;
      DROP MATERIALIZED VIEW IF EXISTS lk.summary; CREATE MATERIALIZED VIEW lk.summary AS SELECT count(*) AS n FROM lk.pages`);
    const client = await openSession(live().pg.url, 'coordinator');
    try {
      const names = ['pages', 'keyed_view', 'summary'];
      const c = await SnapshotCoordinator.exportSet(client, { tables: names.map((table) => ({ schema: 'lk', table })) }, { partitions: 'auto' });
      const held = await admin().query<{ relation: string; mode: string }>(
        `SELECT relation::regclass::text AS relation, mode FROM pg_locks
          WHERE pid = $1 AND locktype = 'relation' AND granted AND relation::regclass::text LIKE 'lk.%' ORDER BY 1`,
        [c.plan.coordinatorPid],
      );
      assert.deepEqual(
        held.rows.map((r) => `${r.relation} ${r.mode}`),
        ['lk.keyed AccessShareLock', 'lk.keyed_view AccessShareLock', 'lk.pages AccessShareLock', 'lk.summary AccessShareLock'],
      );
      await c.abort();
    } finally {
      await closeSession(client);
      await admin().query('DROP VIEW lk.keyed_view; DROP MATERIALIZED VIEW lk.summary');
    }
  });

  it('a set with one table held ACCESS EXCLUSIVE fails with LOCK_TIMEOUT naming that table and its holder, and keeps no lock', async () => {
    await whileHeldExclusive(['lk.keyed'], async (pid, client) => {
      const exporting = SnapshotCoordinator.exportSet(client, { schema: 'lk' }, { partitions: 'auto' }, { lockTimeoutMs: 500 });
      await assert.rejects(within(10_000, exporting), (err: Error & { code?: string }) => {
        assert.equal(err.code, ErrorCode.LOCK_TIMEOUT);
        assert.match(err.message, /one of 2 tables/);
        assert.match(
          err.message,
          new RegExp(`pid ${pid} \\(.*\\) holds AccessExclusiveLock on "lk"\\."keyed", query "BEGIN; LOCK TABLE lk\\.keyed IN ACCESS EXCLUSIVE MODE"`),
        );
        assert.doesNotMatch(err.message, /on "lk"\."pages"/, 'only the table held names a blocker');
        return true;
      });
      const coordinatorPid = (client as unknown as { processID: number }).processID;
      const locks = await admin().query(`SELECT count(*)::int AS n FROM pg_locks WHERE pid = $1 AND locktype = 'relation'`, [coordinatorPid]);
      assert.equal(locks.rows[0].n, 0, 'the coordinator rolled back: no table stays locked');
    });
  });

  it("LOCK_TIMEOUT names a blocker on a partition or on a view's table, without waiting behind it, and past a name gone since", async () => {
    await admin().query(`CREATE TABLE lk.parted (id int, v text) PARTITION BY RANGE (id);
      CREATE TABLE lk.parted_1 PARTITION OF lk.parted FOR VALUES FROM (0) TO (1000000);
      CREATE VIEW lk.keyed_view AS SELECT * FROM lk.keyed`);
    try {
      await whileHeldExclusive(['lk.parted_1', 'lk.keyed'], async (pid, client) => {
        // Reading the partitions' locks must not wait for the partition's own lock (pg_partition_tree() would).
        for (const [table, blocked] of [
          ['parted', '"lk"."parted_1"'],
          ['keyed_view', '"lk"."keyed"'],
        ] as const) {
          const exporting = SnapshotCoordinator.export(client, { schema: 'lk', table }, { partitions: 1 }, { lockTimeoutMs: 300 });
          await assert.rejects(within(10_000, exporting), (err: Error & { code?: string }) => {
            assert.equal(err.code, ErrorCode.LOCK_TIMEOUT);
            assert.ok(err.message.includes(`pid ${pid} `) && err.message.includes(`holds AccessExclusiveLock on ${blocked}`), err.message);
            return true;
          });
        }
        // A table of the list dropped or renamed since the timeout: the others' blockers are still read.
        const named = (await lockTimeoutError(
          client,
          Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }),
          [
            { schema: 'lk', table: 'gone_since' },
            { schema: 'lk', table: 'keyed' },
          ],
          300,
        )) as Error & { code?: string };
        assert.equal(named.code, ErrorCode.LOCK_TIMEOUT);
        assert.ok(named.message.includes(`holds AccessExclusiveLock on "lk"."keyed"`), named.message);
      });
    } finally {
      await admin().query('DROP VIEW lk.keyed_view; DROP TABLE lk.parted');
    }
  });

  it('a partition queued behind a TRUNCATE that waits for the coordinator fails with LOCK_TIMEOUT naming the TRUNCATE, and saying it waits for the run', async () => {
    const coordinatorClient = await openSession(live().pg.url, 'coordinator');
    const reader = await openSession(live().pg.url, 'partition');
    const truncator = await admin().connect();
    try {
      const c = await SnapshotCoordinator.export(coordinatorClient, { schema: 'lk', table: 'keyed' }, { partitions: 2 });
      const pid = await pidOf(truncator);
      await truncator.query(`SET lock_timeout = '8s'`);
      // Queued behind the coordinator's ACCESS SHARE; every later ACCESS SHARE request queues behind it.
      const truncating = truncator.query('TRUNCATE lk.keyed').then(
        () => 'truncated',
        (err: { code?: string }) => err.code,
      );
      await waitUntilWaiting(pid);
      const table = { schema: 'lk', table: 'keyed', columns: ['id', 'v'] };
      const request = { snapshotId: c.plan.snapshotId, table, key: c.plan.table.key, range: c.plan.ranges[0]!, format: csv };
      const started = Date.now();
      await assert.rejects(
        within(20_000, copyPartition(reader, { ...request, lockTimeoutMs: 500 }, new LocalFileSink(join(live().outRoot, 'lk-part.csv'), 0o600))),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, ErrorCode.LOCK_TIMEOUT);
          assert.match(err.message, new RegExp(`pid ${pid}\\b`));
          assert.match(err.message, /AccessExclusiveLock/);
          assert.match(err.message, /TRUNCATE lk\.keyed/);
          assert.match(err.message, /asked for after this run's snapshot locked the table: it waits for the run/);
          return true;
        },
      );
      assert.ok(Date.now() - started < 5_000, "within the partition lock timeout, not the TRUNCATE's");
      await c.abort();
      assert.equal(await truncating, 'truncated', 'the TRUNCATE ran once the export let go');
    } finally {
      await truncator.query('RESET lock_timeout').catch(() => undefined);
      truncator.release();
      await Promise.all([closeSession(coordinatorClient), closeSession(reader)]);
      await admin().query(`INSERT INTO lk.keyed SELECT g, 'v' || g FROM generate_series(1, 3000) g ON CONFLICT DO NOTHING`);
    }
  });

  describe('partitions attached or detached under the export', () => {
    beforeEach(() =>
      admin().query(`DROP TABLE IF EXISTS lk.parted, lk.parted_2, lk.parted_3 CASCADE;
        CREATE TABLE lk.parted (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
        CREATE TABLE lk.parted_1 PARTITION OF lk.parted FOR VALUES FROM (0) TO (500); CREATE TABLE lk.parted_2 PARTITION OF lk.parted FOR VALUES FROM (500) TO (1000);
        INSERT INTO lk.parted SELECT g, 'v' || g FROM generate_series(1, 900) g; CREATE VIEW lk.parted_view AS SELECT id, v FROM lk.parted;
        CREATE TABLE lk.parted_3 (id int PRIMARY KEY, v text); INSERT INTO lk.parted_3 SELECT g, 'v' || g FROM generate_series(1000, 1049) g`),
    );
    after(() => admin().query('DROP TABLE IF EXISTS lk.parted, lk.parted_2, lk.parted_3 CASCADE'));

    /** Exports `table` on a fresh coordinator; `work` gets it and a partition session, both closed however it ends. */
    async function exported(table: string, work: (c: SnapshotCoordinator, reader: Client) => Promise<void>, lockTimeoutMs = 5000): Promise<void> {
      const coordinatorClient = await openSession(live().pg.url, 'coordinator');
      const reader = await openSession(live().pg.url, 'partition');
      try {
        const c = await SnapshotCoordinator.export(coordinatorClient, { schema: 'lk', table }, { partitions: 1 }, { lockTimeoutMs });
        await work(c, reader);
        await c.abort();
      } finally {
        await Promise.all([closeSession(coordinatorClient), closeSession(reader)]);
      }
    }
    const read = (c: SnapshotCoordinator, reader: Client, table: string) =>
      copyPartition(
        reader,
        {
          snapshotId: c.plan.snapshotId,
          table: { schema: 'lk', table, columns: ['id', 'v'] },
          key: null,
          range: c.plan.ranges[0]!,
          format: csv,
          lockTimeoutMs: 5000,
        },
        new LocalFileSink(join(live().outRoot, `lk-${table}.csv`), 0o600),
      );

    for (const table of ['parted', 'parted_view']) {
      it(`one attached while the export of lk.${table} runs (ATTACH does not wait for ACCESS SHARE) is read under the snapshot, so the coordinator refuses to complete: SNAPSHOT_LOST`, async () => {
        await exported(table, async (c, reader) => {
          await c.requireUnchanged();
          await within(10_000, admin().query('ALTER TABLE lk.parted ATTACH PARTITION lk.parted_3 FOR VALUES FROM (1000) TO (2000)'));
          assert.equal((await read(c, reader, table)).rows, 950, "the partition attached since is read: 50 rows the snapshot's table did not have");
          await assert.rejects(c.requireUnchanged(), (err: Error & { code?: string }) => {
            assert.equal(err.code, ErrorCode.SNAPSHOT_LOST);
            assert.match(err.message, /^lk\.parted changed after the snapshot was taken, while it was read \(a partition attached\)/);
            return true;
          });
        });
      });
    }

    it('one a DETACH CONCURRENTLY left pending is neither read nor counted as a change', async () => {
      // The detach's second step waits for the ACCESS SHARE of a transaction that began before it; cancelled there, it stays pending.
      const reader = await admin().connect();
      const detacher = await admin().connect();
      try {
        await reader.query('BEGIN; LOCK TABLE lk.parted IN ACCESS SHARE MODE');
        await detacher.query(`SET statement_timeout = '1s'`);
        await assert.rejects(detacher.query('ALTER TABLE lk.parted DETACH PARTITION lk.parted_2 CONCURRENTLY'), /statement timeout/);
        await detacher.query('RESET statement_timeout');
      } finally {
        await reader.query('ROLLBACK');
        reader.release();
        detacher.release();
      }
      assert.deepEqual((await admin().query(`SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'lk.parted_2'::regclass`)).rows, [
        { inhdetachpending: true },
      ]);
      await exported('parted', async (c, reader) => {
        assert.equal((await read(c, reader, 'parted')).rows, 499);
        await c.requireUnchanged();
      });
      // LOCK TABLE still takes it with its parent, so a LOCK_TIMEOUT names a blocker on it.
      await whileHeldExclusive(['lk.parted_2'], async (holderPid, client) => {
        await assert.rejects(
          SnapshotCoordinator.export(client, { schema: 'lk', table: 'parted' }, { partitions: 1 }, { lockTimeoutMs: 300 }),
          (err: Error & { code?: string }) => {
            assert.equal(err.code, ErrorCode.LOCK_TIMEOUT);
            assert.match(err.message, new RegExp(`pid ${holderPid}\\b.* holds AccessExclusiveLock on "lk"\\."parted_2"`));
            return true;
          },
        );
      });
      await admin().query('ALTER TABLE lk.parted DETACH PARTITION lk.parted_2 FINALIZE');
    });

    it('one attached and held ACCESS EXCLUSIVE by another session: the check is not granted its lock, and says SNAPSHOT_LOST within lock_timeout', async () => {
      await exported(
        'parted',
        async (c) => {
          await admin().query('ALTER TABLE lk.parted ATTACH PARTITION lk.parted_3 FOR VALUES FROM (1000) TO (2000)');
          const holder = await admin().connect();
          try {
            await holder.query('BEGIN; LOCK TABLE lk.parted_3 IN ACCESS EXCLUSIVE MODE');
            await assert.rejects(within(10_000, c.requireUnchanged()), (err: Error & { code?: string }) => {
              assert.equal(err.code, ErrorCode.SNAPSHOT_LOST);
              assert.match(
                err.message,
                /^a partition of lk\.parted \(a lock on it not granted: canceling statement due to lock timeout\) changed after the snapshot was taken/,
              );
              return true;
            });
          } finally {
            await holder.query('ROLLBACK');
            holder.release();
          }
        },
        300,
      );
    });
  });

  it("a blocker's query is named up to its first string literal or comment, folded and truncated", () => {
    assert.equal(maskQuery(`ALTER ROLE app PASSWORD 'hunter2'`), `ALTER ROLE app PASSWORD …`);
    assert.equal(maskQuery(`SELECT $1, $q$hunter2$q$,\n  'it''s'`), `SELECT $1, …`);
    assert.equal(maskQuery(`UPDATE t SET secret = 'hunter2`), `UPDATE t SET secret = …`, "a literal cut off by the server's truncation");
    assert.equal(maskQuery(`LOCK TABLE "it's"."x""y" IN ACCESS EXCLUSIVE MODE`), `LOCK TABLE "it's"."x""y" IN ACCESS EXCLUSIVE MODE`);
    // Each of these showed its secret: a quote in a comment, a backslash escape, a quote in an identifier paired with the literal's.
    for (const query of [
      `-- rotate bob's password\nALTER ROLE bob PASSWORD 'Hunter2-SECRET'`,
      `ALTER ROLE bob PASSWORD E'ab\\'Hunter2-SECRET'`,
      `SELECT "o'brien" FROM t; ALTER ROLE bob PASSWORD 'Hunter2-SECRET'`,
      `/* it's */ SELECT dblink_connect('host=x password=Hunter2-SECRET')`,
    ]) {
      assert.doesNotMatch(maskQuery(query), /SECRET/, query);
    }
    assert.equal(maskQuery('x'.repeat(500)).length, 120);
  });
});

/** Waits until backend `pid` waits for a lock. */
async function waitUntilWaiting(pid: number): Promise<void> {
  await eventually(
    async () => Boolean((await admin().query(`SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted`, [pid])).rowCount),
    `backend ${pid} waited for a lock`,
    {
      timeoutMs: 5_000,
    },
  );
}

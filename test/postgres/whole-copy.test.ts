/** Whole COPY against real PostgreSQL: the file is the snapshot, and the window brackets the read. */
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { utcMicros } from '../../src/lifecycle';
import { resolveTable } from '../../src/postgres/catalog';
import { closeSession, openSession } from '../../src/postgres/session';
import { wholeCopy } from '../../src/postgres/whole-copy';
import { readAsSnapshotSaw } from '../../src/postgres/snapshot-changes';
import { admin, filesDigest, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';
import { LocalFileSink } from '../../src/storage/local-file-sink';

const csv = { format: 'csv' as const, header: true, gzip: false };

describe('whole COPY (live PostgreSQL)', () => {
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('exports the snapshot taken by its first query, not rows changed during the COPY', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS wc CASCADE; CREATE SCHEMA wc; CREATE TABLE wc.t (id int PRIMARY KEY, v text)`);
    await admin().query(`INSERT INTO wc.t VALUES (1,'old'),(2,'two'),(3,'three'),(4,'four')`);
    const before = await tableDigest('SELECT * FROM wc.t');
    const client = await openSession(live().pg.url, 'whole-copy');
    const path = join(live().outRoot, 'wc-1.csv');
    try {
      const table = await resolveTable(client, { schema: 'wc', table: 't' });
      // Another session commits changes after the snapshot exists and before any row is read.
      const result = await wholeCopy(client, table, new LocalFileSink(path, 0o600), {
        format: csv,
        name: 'wc-1.csv',
        onSnapshot: async () => void (await admin().query(`UPDATE wc.t SET v = 'new' WHERE id = 1; INSERT INTO wc.t VALUES (5, 'five')`)),
      });
      const receipt = result.extractionReceipt!;
      assert.equal(result.artifact.rows, 4);
      assert.deepEqual(await filesDigest('wc.t', [path]), before);
      assert.equal((await admin().query('SELECT count(*)::int AS n FROM wc.t')).rows[0].n, 5);
      assert.equal((await admin().query('SELECT v FROM wc.t WHERE id = 1')).rows[0].v, 'new');
      assert.equal(receipt.snapshotAuthority, 'postgresql.repeatable_read');
      assert.match(receipt.sourceToken!, /^sha256:[0-9a-f]{64}$/);
      assert.equal(receipt.clockAuthority, 'postgresql.server');
      assert.deepEqual(receipt.evidence, [{ name: 'wc-1.csv', rows: 4, bytes: result.artifact.bytes, sha256: result.artifact.sha256 }]);
      assert.equal(result.artifact.bytes, (await readFile(path)).length);
    } finally {
      await closeSession(client);
    }
  });

  it('timing: extractionStartedAt ≤ snapshotAcquiredAt ≤ extractionCompletedAt, bracketing the real COPY', async () => {
    await seedMixedTable('wct', 20_000);
    const client = await openSession(live().pg.url, 'whole-copy');
    try {
      const table = await resolveTable(client, { schema: 'wct', table: 't' });
      let firstByteAt: bigint | undefined;
      const serverNow = async (): Promise<bigint> =>
        utcMicros((await admin().query(`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS t`)).rows[0].t);
      const before = await serverNow();
      let probe: Promise<void> | undefined;
      const result = await wholeCopy(client, table, new LocalFileSink(join(live().outRoot, 'wct.csv'), 0o600), {
        format: csv,
        name: 'wct.csv',
        onBytes: () => {
          probe ??= serverNow().then((t) => void (firstByteAt = t));
        },
      });
      await probe;
      const after = await serverNow();
      const r = result.extractionReceipt!;
      const [start, snap, done] = [r.extractionStartedAt, r.snapshotAcquiredAt!, r.extractionCompletedAt!].map(utcMicros) as [bigint, bigint, bigint];
      assert.ok(before <= start, 'the window starts after the call began');
      assert.ok(start <= snap && snap <= done, 'start ≤ snapshot ≤ completion');
      assert.ok(firstByteAt !== undefined && snap <= firstByteAt && firstByteAt <= done, 'the window brackets a moment the COPY was streaming');
      assert.ok(done <= after, 'completion is recorded before the call returns');
      assert.equal(result.artifact.rows, 20_000);
    } finally {
      await closeSession(client);
    }
  });

  it('on failure rolls back and leaves no file, not even a temp', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS wcf CASCADE; CREATE SCHEMA wcf; CREATE TABLE wcf.t (id int PRIMARY KEY, v int)`);
    await admin().query(`INSERT INTO wcf.t SELECT g, g FROM generate_series(1, 1000) g`);
    const client = await openSession(live().pg.url, 'whole-copy');
    const dir = join(live().outRoot, 'wcf');
    await import('node:fs/promises').then((fs) => fs.mkdir(dir, { recursive: true }));
    try {
      const table = await resolveTable(client, { schema: 'wcf', table: 't' });
      // Drop the column from under the COPY's select list: the COPY fails server-side.
      const broken = { ...table, columns: [...table.columns, { name: 'missing', type: 'integer', pgType: 'integer', notNull: false, enumLabels: null }] };
      await assert.rejects(wholeCopy(client, broken, new LocalFileSink(join(dir, 'x.csv'), 0o600), { format: csv, name: 'x.csv' }), /missing/);
      assert.deepEqual(await readdir(dir), []);
      const state = await client.query(`SELECT pg_current_xact_id_if_assigned() IS NULL AS idle, current_setting('transaction_isolation') AS iso`);
      assert.equal(state.rows[0].idle, true);
    } finally {
      await closeSession(client);
    }
  });

  it('an abort mid-COPY closes the session (it cannot run ROLLBACK mid-stream) and leaves no file', async () => {
    await seedMixedTable('wca', 50_000);
    const client = await openSession(live().pg.url, 'whole-copy');
    const dir = join(live().outRoot, 'wca');
    await import('node:fs/promises').then((fs) => fs.mkdir(dir, { recursive: true }));
    const controller = new AbortController();
    try {
      const table = await resolveTable(client, { schema: 'wca', table: 't' });
      await assert.rejects(
        wholeCopy(client, table, new LocalFileSink(join(dir, 'x.csv'), 0o600), {
          format: csv,
          name: 'x.csv',
          signal: controller.signal,
          onBytes: () => controller.abort(),
        }),
        { name: 'AbortError' },
      );
      assert.deepEqual(await readdir(dir), []);
      assert.deepEqual(await settleSessions(), [], 'the session was closed, not left idle in transaction');
    } finally {
      await closeSession(client);
    }
  });

  it('a partition attached or a materialized view refreshed after the snapshot and before the COPY: SNAPSHOT_LOST, no file; one attached after the read was not read, and is no change', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS wcp CASCADE; CREATE SCHEMA wcp;
      CREATE TABLE wcp.t (id int PRIMARY KEY, v text) PARTITION BY RANGE (id); CREATE TABLE wcp.t1 PARTITION OF wcp.t FOR VALUES FROM (0) TO (100);
      INSERT INTO wcp.t SELECT g, 'v' FROM generate_series(1, 50) g;
      CREATE MATERIALIZED VIEW wcp.mv AS SELECT id, v FROM wcp.t1`);
    // Tables filled before any snapshot, attached later: their rows are ones the snapshot sees, but not under wcp.t.
    await admin().query(`CREATE TABLE wcp.t2 (id int PRIMARY KEY, v text); INSERT INTO wcp.t2 SELECT g, 'v' FROM generate_series(200, 209) g;
      CREATE TABLE wcp.t3 (id int PRIMARY KEY, v text); INSERT INTO wcp.t3 SELECT g, 'v' FROM generate_series(300, 309) g`);
    const attach = (n: number) => admin().query(`ALTER TABLE wcp.t ATTACH PARTITION wcp.t${n} FOR VALUES FROM (${n * 100}) TO (${n * 100 + 100})`);
    const dir = join(live().outRoot, 'wcp');
    await import('node:fs/promises').then((fs) => fs.mkdir(dir, { recursive: true }));
    const client = await openSession(live().pg.url, 'whole-copy');
    try {
      const copy = async (name: string, onSnapshot: () => Promise<unknown>) =>
        wholeCopy(client, await resolveTable(client, { schema: 'wcp', table: name }), new LocalFileSink(join(dir, `${name}.csv`), 0o600), {
          format: csv,
          name: `${name}.csv`,
          onSnapshot: async () => void (await onSnapshot()),
        });
      // Before: the COPY read wcp.t2 (10 rows the snapshot's table did not have), and the refreshed view's new file (its
      // rows frozen, so the snapshot read the refreshed contents, 51 rows, not its own 50).
      await assert.rejects(
        copy('t', () => attach(2)),
        { code: 'SNAPSHOT_LOST', message: /^wcp\.t changed after the snapshot was taken, while it was read \(a partition attached\)/ },
      );
      await admin().query('INSERT INTO wcp.t1 VALUES (60, $$w$$)');
      await assert.rejects(
        copy('mv', () => admin().query('REFRESH MATERIALIZED VIEW wcp.mv')),
        {
          code: 'SNAPSHOT_LOST',
          message: /^wcp\.mv changed after the snapshot was taken, before it was read/,
        },
      );
      assert.deepEqual(await readdir(dir), []);
      // A partition attached once the read has taken its partitions was not read: the check passes (comparing the partitions
      // as they are now instead would have sent a correct copy to a fresh attempt).
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; LOCK TABLE wcp.t IN ACCESS SHARE MODE');
      assert.equal((await client.query('SELECT count(*)::int AS n FROM wcp.t')).rows[0].n, 61);
      await attach(3);
      await readAsSnapshotSaw(client, { schema: 'wcp', table: 't' });
      await client.query('ROLLBACK');
    } finally {
      await closeSession(client);
      await admin().query('DROP SCHEMA wcp CASCADE');
    }
  });
});

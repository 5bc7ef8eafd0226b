/**
 * Values of a MySQL source as its files carry them (live MariaDB, the adapter's own read): a FLOAT keeps
 * its value, BIT and spatial values are bytea in the file and the package, a date that names no calendar
 * day fails the read with a code, and a connection lost mid-read fails the range instead of hanging it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { mysqlAdapter } from '../../src/mysql/mysql-adapter';
import { ErrorCode } from '../../src/errors';
import type { OutputSink } from '../../src/storage/output-sink';
import { LocalFileSink } from '../../src/storage/local-file-sink';
import { admin } from '../support/database';
import { mysqlAdmin, mysqlService, settleReader } from '../support/mysql';
import { live } from '../support/services';

const csv = { format: 'csv' as const, header: false, gzip: false };

/** Runs `sql` as root (several statements). */
async function asRoot(sql: string): Promise<void> {
  const root = await mysqlAdmin();
  try {
    await root.query(sql);
  } finally {
    await root.end();
  }
}

/** Plans `table` as one range and reads it into a file; returns the file's text and the package's types. */
async function readWhole(table: string): Promise<{ text: string; types: string[] }> {
  const service = await mysqlService();
  const adapter = mysqlAdapter(service.url);
  const read = await adapter.open({ schema: service.database, table }, { partitions: 1 });
  const path = join(await mkdtemp(join(live().scratch, 'mysql-values-')), 'part.csv');
  await adapter.copyRange(read.handle, read.plan.ranges[0]!, new LocalFileSink(path, 0o600), { format: csv });
  return { text: await readFile(path, 'utf8'), types: read.plan.table.columns.map((c) => c.pgType) };
}

describe('MySQL source values (live MariaDB)', function () {
  this.timeout(120_000);
  afterEach(async () => assert.deepEqual(await settleReader(), { sessions: 0, transactions: 0 }, 'no session of the reader is left'));

  it('a FLOAT keeps its value, BIT and GEOMETRY are bytea (file and package), and PostgreSQL reads the file back exactly', async () => {
    await asRoot(`DROP TABLE IF EXISTS vals; CREATE TABLE vals (id int PRIMARY KEY, f float, b bit(8), g point);
      INSERT INTO vals VALUES (1, 16777216, b'00000101', POINT(1, 2)), (2, 1.2345678, NULL, NULL), (3, 123456789, b'11111111', NULL)`);
    const { text, types } = await readWhole('vals');
    assert.deepEqual(types, ['integer', 'real', 'bytea', 'bytea']);
    await admin().query(`DROP TABLE IF EXISTS public.mysql_vals; CREATE TABLE public.mysql_vals (id int, f real, b bytea, g bytea)`);
    try {
      const client = await admin().connect();
      try {
        const { from } = await import('pg-copy-streams');
        const copy = client.query(from('COPY public.mysql_vals FROM STDIN (FORMAT csv)'));
        await new Promise<void>((resolve, reject) => copy.on('finish', resolve).on('error', reject).end(text));
      } finally {
        client.release();
      }
      const rows = (await admin().query(`SELECT id, f::float8 AS f, encode(b, 'hex') AS b, length(g) AS g FROM public.mysql_vals ORDER BY id`)).rows;
      // Before, FLOAT's six-digit text wrote 16777200, 1.23457 and 123457000; BIT was typed text and POINT broke the UTF-8 file.
      assert.deepEqual(rows, [
        { id: 1, f: 16777216, b: '05', g: 25 },
        { id: 2, f: Math.fround(1.2345678), b: null, g: null },
        { id: 3, f: Math.fround(123456789), b: 'ff', g: null },
      ]);
    } finally {
      await admin().query('DROP TABLE IF EXISTS public.mysql_vals');
    }
  });

  it('a role granted some columns only: every column is refused with INPUT_INVALID (it exported the others as the table); the granted ones export', async () => {
    const service = await mysqlService();
    await asRoot(`DROP TABLE IF EXISTS people; CREATE TABLE people (id int PRIMARY KEY, name varchar(20), ssn varchar(11));
      INSERT INTO people VALUES (1, 'ann', '123-45-6789');
      DROP USER IF EXISTS 'colreader'@'127.0.0.1'; CREATE USER 'colreader'@'127.0.0.1' IDENTIFIED BY 'colpass';
      GRANT SELECT (id, name) ON ${service.database}.people TO 'colreader'@'127.0.0.1'`);
    const url = new URL(service.url);
    [url.username, url.password] = ['colreader', 'colpass'];
    const adapter = mysqlAdapter(url.toString());
    try {
      await assert.rejects(adapter.open({ schema: service.database, table: 'people' }, { partitions: 1 }), (err: Error & { code?: string }) => {
        assert.equal(err.code, ErrorCode.INPUT_INVALID);
        assert.match(err.message, /only some columns of .*people.*--columns/);
        return true;
      });
      const read = await adapter.open({ schema: service.database, table: 'people', columns: ['id', 'name'] }, { partitions: 1 });
      assert.deepEqual(
        read.plan.table.columns.map((c) => c.name),
        ['id', 'name'],
      );
    } finally {
      await asRoot(`DROP USER 'colreader'@'127.0.0.1'`);
    }
  });

  it('a column name longer than a PostgreSQL name (64 characters) is refused with IDENTIFIER_INVALID when the read is planned; --columns leaves it out', async () => {
    const long = 'c'.repeat(64);
    await asRoot(`DROP TABLE IF EXISTS longnames; CREATE TABLE longnames (id int PRIMARY KEY, ${long} int); INSERT INTO longnames VALUES (1, 2)`);
    const service = await mysqlService();
    const adapter = mysqlAdapter(service.url);
    // Before, planning took it and every copy then failed on it.
    await assert.rejects(adapter.open({ schema: service.database, table: 'longnames' }, { partitions: 1 }), (err: Error & { code?: string }) => {
      assert.equal(err.code, ErrorCode.IDENTIFIER_INVALID);
      assert.match(err.message, /64 bytes.*--columns/);
      return true;
    });
    const read = await adapter.open({ schema: service.database, table: 'longnames', columns: ['id'] }, { partitions: 1 });
    assert.deepEqual(
      read.plan.table.columns.map((c) => c.name),
      ['id'],
    );
  });

  it('a date that names no calendar day (2024-02-30 under ALLOW_INVALID_DATES) fails the read with SOURCE_VALUE_UNREPRESENTABLE', async () => {
    await asRoot(`DROP TABLE IF EXISTS baddates; SET SESSION sql_mode = 'ALLOW_INVALID_DATES';
      CREATE TABLE baddates (id int PRIMARY KEY, d date, at datetime); INSERT INTO baddates VALUES (1, '2024-02-29', '2023-04-30 10:00:00'), (2, '2024-02-30', NULL)`);
    await assert.rejects(readWhole('baddates'), (err: Error & { code?: string }) => {
      assert.equal(err.code, ErrorCode.SOURCE_VALUE_UNREPRESENTABLE);
      assert.match(err.message, /column d .*2024-02-30/);
      return true;
    });
  });

  it('a connection killed mid-read fails the range at once (it waited for ever)', async () => {
    await asRoot(`DROP TABLE IF EXISTS many; CREATE TABLE many (id int PRIMARY KEY, v varchar(64)); SET SESSION max_recursive_iterations = 1000000;
      INSERT INTO many WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 400000) SELECT n, REPEAT('x', 60) FROM g`);
    const service = await mysqlService();
    const adapter = mysqlAdapter(service.url);
    const read = await adapter.open({ schema: service.database, table: 'many' }, { partitions: 1 });
    // A sink that pauses a little every 100 chunks keeps the SELECT streaming while the test kills its connection.
    let chunks = 0;
    const slow: OutputSink = {
      location: 'slow',
      open: () => new Writable({ write: (_chunk, _enc, done) => void (++chunks % 100 === 0 ? setTimeout(done, 1) : done()) }),
      commit: async () => ({ location: 'slow', etag: null }),
      discard: async () => undefined,
    };
    const copying = adapter.copyRange(read.handle, read.plan.ranges[0]!, slow, { format: csv });
    copying.catch(() => undefined);
    for (const until = Date.now() + 30_000; chunks < 3;) {
      assert.ok(Date.now() < until, 'the read streams');
      await new Promise((r) => setTimeout(r, 10));
    }
    const root = await mysqlAdmin();
    try {
      // 28 MB, more than loopback's socket buffers hold, paced by the sink: the SELECT is still sending.
      const [rows] = await root.query(`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = ? AND INFO LIKE 'SELECT %many%'`, [service.user]);
      const reading = (rows as { id: number }[])[0];
      assert.ok(reading, 'the SELECT is still running');
      await root.query(`KILL CONNECTION ${Number(reading.id)}`);
    } finally {
      await root.end();
    }
    const settled = await Promise.race([
      copying.then(
        () => 'finished',
        () => 'failed',
      ),
      new Promise((r) => setTimeout(() => r('still waiting'), 15_000)),
    ]);
    assert.equal(settled, 'failed');
  });
});

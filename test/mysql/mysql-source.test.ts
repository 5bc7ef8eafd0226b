/**
 * The MySQL/MariaDB source end to end: a real worker process whose configured source URL is
 * `mysql://…`, the CLI starting and committing the run, CSV files in PostgreSQL's CSV dialect
 * with the same receipts, and a receipt that claims no snapshot. Bad input (an unsupported URL
 * scheme, no usable key for partitions > 1, refused credentials) fails with its code before any file exists;
 * a zero date fails the run with its code and leaves no file.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { access, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { WorkflowFailedError } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import { causes } from '../../src/errors';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { cli, liveCliEnv } from '../support/cli';
import { mysqlAdmin, mysqlService, settleReader } from '../support/mysql';
import { live } from '../support/services';
import { type WorkerProcess, spawnWorker } from '../support/worker-process';

const ROWS = 500;

describe('MySQL source (live MariaDB, worker process, CLI)', function () {
  this.timeout(180_000);
  let worker: WorkerProcess;
  let taskQueue: string;
  let env: Record<string, string>;

  before(async () => {
    const service = await mysqlService();
    const root = await mysqlAdmin();
    try {
      await root.query(`
        DROP VIEW IF EXISTS legacy_clean;
        DROP TABLE IF EXISTS orders, nokey, legacy;
        CREATE TABLE orders (id int PRIMARY KEY, name varchar(64), amount decimal(12,2), created datetime(3), raw varbinary(8));
        CREATE TABLE nokey (v varchar(10));
        INSERT INTO nokey VALUES ('a'), ('b');
        SET SESSION sql_mode = '';
        CREATE TABLE legacy (id int PRIMARY KEY, d date, at datetime);
        INSERT INTO legacy VALUES (1, '2026-01-02', '2026-01-02 03:04:05'), (2, '0000-00-00', '2026-02-00 10:00:00');
        CREATE VIEW legacy_clean AS SELECT id, NULLIF(d, '0000-00-00') AS d FROM legacy;`);
      await root.query(
        `INSERT INTO orders WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
           SELECT n, CASE n WHEN 1 THEN 'say "hi", then' WHEN 2 THEN CONCAT('two', CHAR(10), 'lines') WHEN 3 THEN '' WHEN 4 THEN NULL ELSE CONCAT('order ', n) END,
                  n * 1.25, TIMESTAMP '2026-01-01 00:00:00' + INTERVAL n MINUTE, IF(n = 5, X'00FF', NULL) FROM g`,
        [ROWS],
      );
    } finally {
      await root.end();
    }
    const badPassword = service.url.replace(/:[^:@/]+@/, ':wrong@');
    taskQueue = `mysql-${randomUUID()}`;
    worker = await spawnWorker(taskQueue, {
      PG_EXTRACT_SOURCE_SHOP_URL: service.url,
      PG_EXTRACT_SOURCE_BADPASS_URL: badPassword,
      PG_EXTRACT_SOURCE_ORACLE_URL: 'oracle://reader:secret@127.0.0.1:1521/db',
      PG_EXTRACT_TARGET_WAREHOUSE_URL: live().pg.url,
    });
    env = liveCliEnv(taskQueue);
  });

  after(async () => {
    if (!worker) return;
    worker.child.kill('SIGTERM');
    // A graceful shutdown waits for running activities; a wedged one must not outlive the run.
    const killer = setTimeout(() => worker.child.kill('SIGKILL'), 10_000);
    await worker.exited;
    clearTimeout(killer);
  });

  afterEach(async () => assert.deepEqual(await settleReader(), { sessions: 0, transactions: 0 }, 'no session of the reader is left'));

  it('exports a table through the CLI: key-range partitions, PostgreSQL-dialect CSV, truthful receipts, one terminal outcome', async () => {
    const started = await cli(
      ['start', '--source', 'shop', '--table', `${(await mysqlService()).database}.orders`, '--partitions', '3', '--wait', '--json'],
      env,
    );
    assert.equal(started.code, 0, started.stderr + worker.output());
    const doc = JSON.parse(started.stdout);
    assert.equal(doc.files.length, 3);
    assert.equal(doc.totals.rows, ROWS);
    assert.deepEqual(
      doc.files.map((f: { range: unknown }) => f.range),
      [
        { kind: 'key', lower: null, upper: '167' },
        { kind: 'key', lower: '167', upper: '334' },
        { kind: 'key', lower: '334', upper: null },
      ],
    );
    const receipt = doc.extractionReceipt;
    assert.equal(receipt.clockAuthority, 'orchestrator.utc');
    assert.equal(receipt.snapshotAuthority, null);
    assert.equal(receipt.snapshotAcquiredAt, null);
    assert.equal(receipt.sourceToken, null);
    assert.equal(receipt.pointInTime, false, 'the receipt says the partitions were not read at one point in time');
    let text = '';
    for (const [i, f] of doc.files.entries()) {
      const bytes = await readFile(f.path);
      assert.equal(f.bytes, bytes.length);
      assert.equal(f.sha256, createHash('sha256').update(bytes).digest('hex'));
      assert.deepEqual(receipt.evidence[i], { name: receipt.evidence[i].name, rows: f.rows, bytes: f.bytes, sha256: f.sha256 });
      text += bytes.toString('utf8');
    }
    // COPY … (FORMAT csv)'s dialect: quotes doubled, a newline kept inside quotes, "" for an empty string, nothing for NULL, bytea's \x hex.
    assert.ok(
      text.startsWith(
        'id,name,amount,created,raw\n1,"say ""hi"", then",1.25,2026-01-01 00:01:00.000,\n2,"two\nlines",2.50,2026-01-01 00:02:00.000,\n3,"",3.75,2026-01-01 00:03:00.000,\n4,,5.00,2026-01-01 00:04:00.000,\n5,order 5,6.25,2026-01-01 00:05:00.000,\\x00ff\n',
      ),
      text.slice(0, 300),
    );

    // The data package types each column as the PostgreSQL type its text reads as, so `pg-extract reader` casts it.
    assert.ok(doc.dataPackage, 'a datapackage.json is written');
    const printed = await cli(['reader', doc.workflowId, '--engine', 'duckdb'], env);
    assert.equal(printed.code, 0, printed.stderr);
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    const query = printed.stdout.trim().replace(/;$/, '');
    const described = (await duck.runAndReadAll(`DESCRIBE ${query}`)).getRowObjectsJson() as { column_name: string; column_type: string }[];
    assert.deepEqual(Object.fromEntries(described.map((r) => [r.column_name, r.column_type])), {
      id: 'INTEGER',
      name: 'VARCHAR',
      amount: 'DECIMAL(12,2)',
      created: 'TIMESTAMP',
      raw: 'BLOB',
    });
    const read = await duck.runAndReadAll(`SELECT count(*)::int AS n, sum(amount)::varchar AS total, max(created)::varchar AS last FROM (${query})`);
    assert.deepEqual(read.getRowsJson(), [[ROWS, ((1.25 * ROWS * (ROWS + 1)) / 2).toFixed(2), '2026-01-01 08:20:00']]);

    const committed = await cli(['commit', doc.workflowId, '--outcome', 'committed', '--json'], env);
    assert.equal(committed.code, 0, committed.stderr);
    assert.equal(JSON.parse(committed.stdout).outcome, 'success');
    for (const f of doc.files) await assert.rejects(access(f.path));
  });

  it('one partition, gzipped: one SELECT into one file, and still no claim of a consistent read', async () => {
    const handle = await startExtraction(live().temporal.client, { source: 'shop', table: 'app.orders', partitions: 1, gzip: true }, { taskQueue });
    const manifest = await waitForManifest(handle);
    assert.equal(manifest.strategy, 'whole_copy');
    assert.equal(manifest.snapshotDigest, null);
    const [file] = manifest.files;
    const bytes = await readFile(file!.path);
    assert.equal(file!.sha256, createHash('sha256').update(bytes).digest('hex'), 'the digest is of the gzipped bytes written');
    assert.equal(gunzipSync(bytes).toString('utf8').split('\n').length - 1, ROWS + 1 + 1, 'a header, the rows, one with a newline inside quotes');
    const receipt = manifest.extractionReceipt!;
    assert.deepEqual([receipt.clockAuthority, receipt.snapshotAuthority, receipt.sourceToken, receipt.pointInTime], ['orchestrator.utc', null, null, false]);
    assert.deepEqual(receipt.evidence, [{ name: file!.name, rows: ROWS, bytes: bytes.length, sha256: file!.sha256 }]);
    await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
    await assert.rejects(access(file!.path));
  });

  const cases: [string, Record<string, unknown>, string][] = [
    ['an unsupported URL scheme', { source: 'oracle', table: 'app.orders', partitions: 2 }, 'SOURCE_URL_UNSUPPORTED'],
    ['an unsupported URL scheme, one partition', { source: 'oracle', table: 'app.orders', partitions: 1 }, 'SOURCE_URL_UNSUPPORTED'],
    ['a table without a usable key for partitions > 1', { source: 'shop', table: 'app.nokey', partitions: 3 }, 'KEY_TYPE_UNSUPPORTED'],
    ['refused credentials', { source: 'badpass', table: 'app.orders', partitions: 2 }, 'SOURCE_AUTH_FAILED'],
    ['refused credentials, one partition', { source: 'badpass', table: 'app.orders', partitions: 1 }, 'SOURCE_AUTH_FAILED'],
  ];
  for (const [what, request, code] of cases) {
    it(`${what} → ${code}, before any file exists`, async () => {
      const outDir = `mysql-bad-${randomUUID()}`;
      const handle = await startExtraction(live().temporal.client, { ...request, outDir } as never, { taskQueue });
      await assert.rejects(handle.result(), (err: unknown) => {
        assert.ok(err instanceof WorkflowFailedError, String(err));
        assert.match(JSON.stringify(err.cause), new RegExp(`"type":"${code}"`));
        assert.doesNotMatch(JSON.stringify(err.cause), /wrong|secret/, 'no credential in the failure');
        return true;
      });
      const left = await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []);
      assert.deepEqual(left, [], 'no file was written');
      const activityTypes = ((await handle.fetchHistory()).events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
      assert.ok(!activityTypes.includes('copyPartition'), `no partition was scheduled: ${activityTypes.join(', ')}`);
    });
  }

  it('a zero date (MySQL keeps them where its sql_mode allows) fails the run with SOURCE_VALUE_UNREPRESENTABLE naming its column and leaves no file; a view that casts it exports', async () => {
    const db = (await mysqlService()).database;
    const outDir = `mysql-zero-${randomUUID()}`;
    const handle = await startExtraction(live().temporal.client, { source: 'shop', table: `${db}.legacy`, partitions: 2, outDir } as never, { taskQueue });
    await assert.rejects(handle.result(), (err: unknown) => {
      assert.ok(err instanceof WorkflowFailedError, String(err));
      assert.match(JSON.stringify(err.cause), /"type":"SOURCE_VALUE_UNREPRESENTABLE"/);
      assert.ok(
        [...causes(err)].some((e) => /column d holds a MySQL date that names no calendar day \(0000-00-00\)/.test((e as Error).message)),
        'the message names the column and the value',
      );
      return true;
    });
    assert.deepEqual(await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []), [], 'no file was written');
    const view = await startExtraction(live().temporal.client, { source: 'shop', table: `${db}.legacy_clean`, partitions: 1 } as never, { taskQueue });
    const manifest = await waitForManifest(view);
    assert.equal(await readFile(manifest.files[0]!.path, 'utf8'), 'id,d\n1,2026-01-02\n2,\n');
    await view.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
  });

  it('an internal load (target.via internal) from a MySQL source is refused: abort with TARGET_NOT_SAME_DATABASE', async () => {
    const request = { source: 'shop', table: 'app.orders', target: { name: 'warehouse', table: 'public.mysql_orders', via: 'internal' } };
    const result = (await (await startExtraction(live().temporal.client, request as never, { taskQueue })).result()) as ExtractionResult;
    assert.deepEqual([result.load?.outcome, result.load?.reason], ['failed', 'TARGET_NOT_SAME_DATABASE']);
    assert.equal(result.terminalReceipt.outcome, 'abort');
  });

  it('the worker log never shows a source password', async () => {
    const password = decodeURIComponent(new URL((await mysqlService()).url).password);
    assert.ok(worker.output().length > 0);
    for (const secret of [password, 'secret'])
      assert.ok(!worker.output().includes(secret), `the worker printed ${secret === 'secret' ? 'the oracle URL' : 'the MySQL'} password`);
  });
});

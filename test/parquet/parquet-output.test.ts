/**
 * Parquet output, live: a table holding every type of the README's mapping, with NULLs and the
 * values that break writers, goes through the workflow to Parquet (local and S3), and pyarrow — a
 * reader independent of the writer — reads every value back equal to PostgreSQL's own (compared as
 * exact text: float bits, epoch days and microseconds, decimal digits, hex), with the physical and
 * logical types, codec, row groups and key-value metadata the README promises. Values a Parquet type
 * cannot hold fail the run with a code and leave nothing; bad option combinations fail before anything.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { type Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { projectRoot } from '../../devenv/project-root';
import { scratchPrefix } from '../../src/parquet/scratch';
import type { DataPackage } from '../../src/readers/data-package';
import { commitUpdate } from '../../src/contract/definitions';
import { cli, cliJson, liveCliEnv } from '../support/cli';
import { admin, settleSessions } from '../support/database';
import { bucketContents, download, s3Service } from '../support/s3';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

const run = promisify(execFile);

/** Column, type, its values by row (SQL), and the SQL of the exact text pyarrow's value must equal. */
const arrayOf = (element: string) => (c: string) =>
  `CASE WHEN ${c} IS NULL THEN NULL ELSE coalesce((SELECT array_agg(${element.replace(/\$/g, 'x')} ORDER BY o) FROM unnest(${c}) WITH ORDINALITY AS u(x, o)), '{}') END`;
const COLUMNS: [string, string, string[], (c: string) => string][] = [
  ['i2', 'smallint', ['-32768', '32767', '0', 'NULL', '1', '2', '3', '4'], (c) => `${c}::text`],
  ['i4', 'integer', ['-2147483648', '2147483647', '0', 'NULL', '1', '2', '3', '4'], (c) => `${c}::text`],
  ['i8', 'bigint', ['-9223372036854775808', '9223372036854775807', '0', 'NULL', '1', '2', '3', '4'], (c) => `${c}::text`],
  ['f4', 'real', [`'NaN'`, `'Infinity'`, `'-Infinity'`, `'-0'`, `'3.4028235e38'`, `'1.4e-45'`, `'0.1'`, 'NULL'], (c) => `encode(float4send(${c}), 'hex')`],
  [
    'f8',
    'double precision',
    [`'NaN'`, `'Infinity'`, `'-Infinity'`, `'-0'`, `'1.2345678901234567'`, `'5e-324'`, `'1.7976931348623157e308'`, 'NULL'],
    (c) => `encode(float8send(${c}), 'hex')`,
  ],
  ['n10', 'numeric(10,2)', [`'12345678.91'`, `'-0.01'`, '0', 'NULL', '1', `'1.5'`, `'-99999999.99'`, '2'], (c) => `${c}::text`],
  ['n38', 'numeric(38,2)', [`'123456789012345678901234567890123456.78'`, `'-0.01'`, '0', 'NULL', '1', '2', '3', '4'], (c) => `${c}::text`],
  [
    'n',
    'numeric',
    [`'123456789012345678901234567890.123456789'`, `'NaN'`, `'Infinity'`, `'-Infinity'`, 'NULL', `'1e-30'`, '0', `'-1.50'`],
    (c) => `${c}::text`,
  ],
  // A scale above the precision (PostgreSQL 15): every value under 0.001, DECIMAL(5,5).
  ['n25', 'numeric(2,5)', [`'0.00012'`, `'-0.00099'`, '0', 'NULL', `'0.00001'`, '0', '0', '0'], (c) => `${c}::text`],
  ['n45', 'numeric(45,5)', [`'1234567890123456789012345678901234567890.12345'`, '0', 'NULL', '1', '2', '3', '4', '5'], (c) => `${c}::text`],
  ['b', 'boolean', ['true', 'false', 'NULL', 'true', 'false', 'true', 'true', 'false'], (c) => `${c}::text`],
  ['t', 'text', ['NULL', `''`, `'NULL'`, `E'\\\\N'`, `E'two\\nlines, "quoted", with, commas'`, `'ü€😀'`, `' '`, `'x'`], (c) => c],
  // A \r in the first line's quoted value: DuckDB took it for a line end unless told PostgreSQL's.
  ['vc', 'varchar(10)', [`E'a\\r\\nb'`, 'NULL', `''`, `'b'`, `'c'`, `'d'`, `'e'`, `'f'`], (c) => c],
  ['ch', 'char(5)', [`'ab'`, 'NULL', `''`, `'abcde'`, `'c'`, `'d'`, `'e'`, `'f'`], (c) => `${c}::text || repeat(' ', 5 - length(${c}::text))`],
  ['by', 'bytea', [`'\\x00ff'`, `'\\x'`, 'NULL', `'\\x5c4e2c220a'`, `'\\x00'`, `'\\x01'`, `'\\x02'`, `'\\x03'`], (c) => `encode(${c}, 'hex')`],
  [
    'u',
    'uuid',
    [
      `'00000000-0000-0000-0000-000000000001'`,
      'NULL',
      `'ffffffff-ffff-ffff-ffff-ffffffffffff'`,
      `'6ba7b810-9dad-11d1-80b4-00c04fd430c8'`,
      'NULL',
      'NULL',
      'NULL',
      'NULL',
    ],
    (c) => `replace(${c}::text, '-', '')`,
  ],
  [
    'd',
    'date',
    [`'0044-03-15 BC'`, `'4713-01-01 BC'`, `'2026-12-03'`, 'NULL', `'5874897-12-31'`, `'1970-01-01'`, `'1969-12-31'`, `'0001-01-01'`],
    (c) => `(${c} - '1970-01-01'::date)::text`,
  ],
  [
    'ts',
    'timestamp',
    [
      `'0044-03-15 12:34:56.789 BC'`,
      `'2026-12-03 10:00:00.123456'`,
      'NULL',
      `'1999-12-31 23:59:59'`,
      `'294000-01-01 00:00:00'`,
      `'4713-01-01 00:00:00 BC'`,
      `'1970-01-01'`,
      `'1969-12-31 23:59:59.999999'`,
    ],
    (c) => `(extract(epoch FROM ${c}) * 1000000)::bigint::text`,
  ],
  [
    'tz',
    'timestamptz',
    [
      `'0044-03-15 12:34:56.789+00 BC'`,
      `'2026-12-03 10:00:00.123456+02'`,
      'NULL',
      `'1999-12-31 23:59:59+00'`,
      `'2000-06-01 12:00:00-07:30'`,
      `'1970-01-01 00:00:00+00'`,
      'NULL',
      'NULL',
    ],
    (c) => `(extract(epoch FROM ${c}) * 1000000)::bigint::text`,
  ],
  [
    'iv',
    'interval',
    [
      `'1 year 2 mons 3 days 04:05:06.789'`,
      `'-1 days +02:00:00'`,
      `'00:00:00'`,
      'NULL',
      `'-2 years -03:00:00.000001'`,
      `'1 mon -1 days'`,
      `'1 day'`,
      `'2 days'`,
    ],
    (c) => `${c}::text`,
  ],
  ['js', 'json', [`'{"a": [1, 2]}'`, `'"x"'`, `'null'`, 'NULL', `'1'`, `'[]'`, `'{"b":true}'`, `'2.50'`], (c) => `${c}::text`],
  ['jb', 'jsonb', [`'{"a": [1, 2]}'`, `'"x,y"'`, `'null'`, 'NULL', `'1'`, `'{}'`, `'{"b":true}'`, `'2.50'`], (c) => `${c}::text`],
  ['ia', 'int[]', [`'{1,2,NULL}'`, `'{}'`, 'NULL', `'{-1}'`, `'{1}'`, `'{2,3}'`, `'{4}'`, `'{5}'`], arrayOf('$::text')],
  [
    'fa',
    'float8[]',
    [`'{NaN,-0,Infinity,-Infinity,0.1}'`, `'{}'`, 'NULL', `'{NULL}'`, `'{1}'`, `'{2}'`, `'{3}'`, `'{4}'`],
    arrayOf(`encode(float8send($), 'hex')`),
  ],
  ['na', 'numeric(10,2)[]', [`'{1.5,-0.01,NULL}'`, `'{}'`, 'NULL', `'{0}'`, `'{1}'`, `'{2}'`, `'{3}'`, `'{4}'`], arrayOf('$::text')],
  [
    'ta',
    'text[]',
    // PostgreSQL leaves ', [, ] and ( unquoted in an array's text ({it's,x]}): text arrays stay that text, exactly.
    [`E'{"a,b",NULL,"NULL","x\\\\"y","{z}",""}'`, `'{}'`, 'NULL', `'{" a "}'`, `E'{"back\\\\\\\\slash"}'`, `'{ü}'`, `'{it''s,x]}'`, `'{''a,b'',(c}'`],
    (c) => `${c}::text`,
  ],
  ['da', 'date[]', [`'{2026-12-03,NULL}'`, 'NULL', `'{}'`, `'{0044-03-15 BC}'`, 'NULL', 'NULL', 'NULL', 'NULL'], (c) => `${c}::text`],
  ['e', 'pq.mood', [`'ok'`, `'happy'`, 'NULL', `'sad'`, `'ok'`, `'ok'`, `'sad'`, `'happy'`], (c) => `${c}::text`],
  // format('%s') is inet's output function (its ::text cast always adds the mask).
  ['inet', 'inet', [`'10.0.0.1/8'`, 'NULL', `'::1'`, 'NULL', 'NULL', 'NULL', 'NULL', 'NULL'], (c) => `CASE WHEN ${c} IS NOT NULL THEN format('%s', ${c}) END`],
  ['r', 'int4range', [`'[1,5)'`, `'empty'`, 'NULL', `'(,3]'`, 'NULL', 'NULL', 'NULL', 'NULL'], (c) => `${c}::text`],
  ['dom', 'pq.posint', ['1', 'NULL', '2', '3', '4', '5', '6', '7'], (c) => `${c}::text`],
  // A domain over a domain over numeric(12,2): its values are numeric(12,2)'s.
  ['damt', 'pq.refund', [`'12.50'`, 'NULL', `'0'`, `'1.25'`, `'9999999999.99'`, `'3'`, `'4'`, `'5'`], (c) => `${c}::text`],
];
const ROWS = 8;
const BIG_ROWS = 300_000;

interface ParquetRead {
  columns: { path: string; physical: string; logical: string; length: number | null }[];
  names: string[];
  kv: Record<string, string>;
  rowGroups: number;
  codec: string | null;
  rows: unknown[][];
}

async function pyarrowRead(paths: string[]): Promise<ParquetRead[]> {
  const { stdout } = await run(join(projectRoot(), '.venv', 'bin', 'python'), [join(projectRoot(), 'test', 'parquet', 'read-parquet.py'), ...paths], {
    maxBuffer: 64 << 20,
  });
  return JSON.parse(stdout) as ParquetRead[];
}

/** PostgreSQL's own exact text of every value, in id order. */
async function expectedRows(table: string): Promise<unknown[][]> {
  const select = COLUMNS.map(([name, , , exact]) => exact(`"${name}"`)).join(', ');
  const result = await admin().query({ text: `SELECT id::text, ${select} FROM ${table} ORDER BY id`, rowMode: 'array' });
  return result.rows as unknown[][];
}

async function scratchLeft(): Promise<string[]> {
  return (await readdir(tmpdir())).filter((n) => n.startsWith(scratchPrefix()));
}

/** Starts a Parquet run of `table` into `outDir` and returns its failure as JSON (the run must fail). */
async function failureOf(client: Client, taskQueue: string, table: string, outDir: string): Promise<{ failure: string; handle: WorkflowHandle }> {
  const handle = await startExtraction(client, { table, partitions: 1, format: 'parquet', outDir }, { taskQueue });
  let failure = '';
  await assert.rejects(handle.result(), (err: unknown) => {
    assert.ok(err instanceof WorkflowFailedError);
    failure = JSON.stringify(err.cause);
    return true;
  });
  return { failure, handle };
}

/** No Parquet file or temp file is left under the run's `outDir`. */
async function assertNoFileLeft(outDir: string): Promise<void> {
  const left = await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []);
  assert.deepEqual(
    left.filter((n) => /\.parquet|\.tmp-/.test(String(n))),
    [],
    'no file or temp file',
  );
}

describe('Parquet output (live, read back by pyarrow)', function () {
  this.timeout(180_000);
  afterEach(async () => {
    assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
    assert.deepEqual(await scratchLeft(), [], 'no scratch folder is left');
  });

  before(async () => {
    await admin().query(
      `DROP SCHEMA IF EXISTS pq CASCADE; CREATE SCHEMA pq; CREATE TYPE pq.mood AS ENUM ('sad', 'ok', 'happy'); CREATE DOMAIN pq.posint AS int CHECK (VALUE > 0);
       CREATE DOMAIN pq.amount AS numeric(12,2); CREATE DOMAIN pq.refund AS pq.amount CHECK (VALUE >= 0)`,
    );
    await admin().query(`CREATE TABLE pq.t (id bigint PRIMARY KEY, ${COLUMNS.map(([name, type]) => `"${name}" ${type}`).join(', ')})`);
    for (let row = 0; row < ROWS; row++) {
      await admin().query(`INSERT INTO pq.t VALUES (${row + 1}, ${COLUMNS.map(([, , values]) => values[row]).join(', ')})`);
    }
    await admin().query(`CREATE TABLE pq.big AS SELECT g AS id, md5(g::text) AS a, now() + g * interval '1 s' AS at FROM generate_series(1, ${BIG_ROWS}) g`);
  });

  it('2 partitions to local files: every value, type, codec and the key-value metadata as the README says; receipts are the files', async () => {
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(client, { table: 'pq.t', partitions: 2, format: 'parquet' }, { taskQueue });
      const manifest = await waitForManifest(handle);
      assert.deepEqual(
        manifest.files.map((f) => f.path.split('/').pop()),
        ['part-0000.parquet', 'part-0001.parquet'],
      );
      for (const f of manifest.files) {
        const body = await readFile(f.path);
        assert.equal(f.bytes, body.length, 'bytes of the file as stored');
        assert.equal(f.sha256, createHash('sha256').update(body).digest('hex'), 'sha256 of the file as stored');
      }
      const read = await pyarrowRead(manifest.files.map((f) => f.path));
      assert.deepEqual(
        read.map((r) => r.rows.length),
        manifest.files.map((f) => f.rows),
        'receipted rows',
      );
      assert.deepEqual(
        read.flatMap((r) => r.rows),
        await expectedRows('pq.t'),
        'every value exactly',
      );

      const [first] = read;
      assert.deepEqual(first!.names, ['id', ...COLUMNS.map(([name]) => name)]);
      assert.equal(first!.codec, 'ZSTD', 'zstd by default');
      const types = await admin().query<{ name: string; type: string }>(
        // A domain column is described by its base type (pq.refund's base is a domain too, pq.amount's is numeric(12,2)).
        `SELECT attname AS name, CASE typname WHEN 'posint' THEN 'integer' WHEN 'refund' THEN 'numeric(12,2)' ELSE format_type(atttypid, atttypmod) END AS type
           FROM pg_attribute JOIN pg_type ON pg_type.oid = atttypid WHERE attrelid = 'pq.t'::regclass AND attnum > 0 ORDER BY attnum`,
      );
      assert.deepEqual(
        JSON.parse(first!.kv['pg_extract.columns']!),
        types.rows.map((r) => ({ name: r.name, pgType: r.type })),
        'names and PostgreSQL types in the metadata',
      );
      const column = (path: string) => first!.columns.find((c) => c.path === path)!;
      assert.deepEqual(column('u'), { path: 'u', physical: 'FIXED_LEN_BYTE_ARRAY', logical: 'UUID', length: 16 });
      assert.match(column('n10').logical, /^Decimal\(precision=10, scale=2\)$/);
      assert.match(column('n38').logical, /^Decimal\(precision=38, scale=2\)$/);
      assert.deepEqual([column('n').physical, column('n').logical, column('n45').logical, column('iv').logical], ['BYTE_ARRAY', 'String', 'String', 'String']);
      assert.deepEqual([column('js').logical, column('jb').logical], ['JSON', 'JSON']);
      assert.deepEqual([column('by').physical, column('by').logical], ['BYTE_ARRAY', 'None']);
      assert.deepEqual([column('f4').physical, column('f8').physical, column('i8').physical, column('b').physical], ['FLOAT', 'DOUBLE', 'INT64', 'BOOLEAN']);
      assert.match(column('ts').logical, /^Timestamp\(isAdjustedToUTC=false, timeUnit=microseconds/);
      assert.match(column('tz').logical, /^Timestamp\(isAdjustedToUTC=true, timeUnit=microseconds/);
      assert.deepEqual([column('d').physical, column('d').logical], ['INT32', 'Date']);
      assert.deepEqual([column('ia.list.element').physical, column('fa.list.element').physical, column('ta').logical], ['INT32', 'DOUBLE', 'String']);
      assert.match(column('n25').logical, /^Decimal\(precision=5, scale=5\)$/);
      assert.match(column('na.list.element').logical, /^Decimal\(precision=10, scale=2\)$/);
      assert.deepEqual([column('e').logical, column('da').logical, column('inet').logical], ['String', 'String', 'String']);
      assert.deepEqual([column('dom').physical, column('dom').logical], ['INT32', 'Int(bitWidth=32, isSigned=true)'], 'a domain as its base type');
      assert.match(column('damt').logical, /^Decimal\(precision=12, scale=2\)$/);

      const pkg = JSON.parse(await readFile(manifest.dataPackage!.path, 'utf8')) as DataPackage;
      const [resource] = pkg.resources;
      assert.deepEqual(
        [resource!.format, resource!.mediatype, resource!.path],
        ['parquet', 'application/vnd.apache.parquet', ['part-0000.parquet', 'part-0001.parquet']],
      );
      const field = (name: string) => resource!.schema!.fields.find((f) => f.name === name)!;
      assert.deepEqual(
        ['u', 'n10', 'n', 'ia', 'da', 'tz'].map((n) => [field(n).pgType, field(n).parquetType]),
        [
          ['uuid', 'UUID'],
          ['numeric(10,2)', 'DECIMAL(10,2)'],
          ['numeric', 'STRING'],
          ['integer[]', 'LIST<INT32>'],
          ['date[]', 'STRING'],
          ['timestamp with time zone', 'TIMESTAMP(MICROS, UTC)'],
        ],
      );

      // `pg-extract reader` prints a DuckDB statement over the run's files.
      const env = liveCliEnv(taskQueue);
      const printed = await cli(['reader', handle.workflowId, '--engine', 'duckdb'], env);
      assert.equal(printed.code, 0, printed.stderr);
      const duck = await (await DuckDBInstance.create(':memory:')).connect();
      const described = await duck.runAndReadAll(`DESCRIBE ${printed.stdout.trim().replace(/;$/, '')}`);
      const duckTypes = Object.fromEntries(
        (described.getRowObjectsJson() as { column_name: string; column_type: string }[]).map((r) => [r.column_name, r.column_type]),
      );
      assert.deepEqual(
        [duckTypes.u, duckTypes.n10, duckTypes.tz, duckTypes.ia, duckTypes.js],
        ['UUID', 'DECIMAL(10,2)', 'TIMESTAMP WITH TIME ZONE', 'INTEGER[]', 'JSON'],
      );
      const counted = await duck.runAndReadAll(`SELECT count(*)::INTEGER FROM (${printed.stdout.trim().replace(/;$/, '')})`);
      assert.deepEqual(counted.getRowsJson(), [[ROWS]]);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('one file (whole COPY) to S3 with snappy: the object is the receipted bytes, read back exactly; release leaves nothing', async () => {
    const s3 = await s3Service();
    await s3.createBucket('pgx-parquet');
    await withWorker(
      async ({ client, taskQueue }) => {
        const handle = await startExtraction(
          client,
          { table: 'pq.t', partitions: 1, format: 'parquet', compression: 'snappy', outDir: 's3://pgx-parquet/runs' },
          { taskQueue },
        );
        const manifest = await waitForManifest(handle);
        assert.equal(manifest.files.length, 1);
        assert.match(manifest.files[0]!.path, /^s3:\/\/pgx-parquet\/runs\/.*\/part-0000\.parquet$/);
        const [local] = await download([manifest.files[0]!.path], await mkdtemp(join(live().scratch, 'pq-s3-')));
        const body = await readFile(local!);
        assert.deepEqual([body.length, createHash('sha256').update(body).digest('hex')], [manifest.files[0]!.bytes, manifest.files[0]!.sha256]);
        const [read] = await pyarrowRead([local!]);
        assert.equal(read!.codec, 'SNAPPY');
        assert.deepEqual(read!.rows, await expectedRows('pq.t'));
        const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
        assert.deepEqual([receipt.outcome, receipt.cleanupSucceeded], ['abort', true]);
        assert.deepEqual(await bucketContents('pgx-parquet', 'runs/'), { objects: [], uploads: [] });
      },
      { s3Env: s3.env },
    );
  });

  for (const [what, type, value] of [
    ['an infinite date', 'date', `'infinity'`],
    ['a timestamp past the Parquet range', 'timestamp', `'294270-01-01'`],
    ['NaN in numeric(p,s)', 'numeric(10,2)', `'NaN'`],
    ['a two-dimensional array', 'int[]', `'{{1,2},{3,4}}'`],
  ] as const) {
    it(`${what} fails the run with PARQUET_VALUE_UNREPRESENTABLE; no file is left`, async () => {
      await admin().query(
        `DROP TABLE IF EXISTS pq.bad; CREATE TABLE pq.bad (id int PRIMARY KEY, v ${type}); INSERT INTO pq.bad VALUES (1, NULL), (2, ${value})`,
      );
      await withWorker(async ({ client, taskQueue }) => {
        const out = `bad-${type.replace(/\W/g, '')}`;
        const { failure } = await failureOf(client, taskQueue, 'pq.bad', out);
        assert.match(failure, /PARQUET_VALUE_UNREPRESENTABLE/);
        assert.match(failure, /column v|one-dimensional|Could not convert/);
        await assertNoFileLeft(out);
      });
    });
  }

  it('a first value that starts with a byte-order mark keeps it (DuckDB drops one at the start of what it reads)', async () => {
    await admin().query(
      `DROP TABLE IF EXISTS pq.bom; CREATE TABLE pq.bom (v text PRIMARY KEY, w int); INSERT INTO pq.bom VALUES (E'\\ufeffbom', 1), (E'\\ufeffx', 2)`,
    );
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(client, { table: 'pq.bom', partitions: 1, format: 'parquet' }, { taskQueue });
      const manifest = await waitForManifest(handle);
      const [read] = await pyarrowRead([manifest.files[0]!.path]);
      assert.deepEqual(read!.rows, [
        ['\ufeffbom', '1'],
        ['\ufeffx', '2'],
      ]);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('a large value DuckDB refuses is cut in the failure: a two-dimensional array of 100 000 integers', async () => {
    await admin().query(
      `DROP TABLE IF EXISTS pq.badwide; CREATE TABLE pq.badwide (id int PRIMARY KEY, v int[]);
       INSERT INTO pq.badwide VALUES (1, (SELECT array_agg(ARRAY[g, 900000 + g]) FROM generate_series(1, 50000) g))`,
    );
    await withWorker(async ({ client, taskQueue }) => {
      const { failure } = await failureOf(client, taskQueue, 'pq.badwide', 'bad-wide');
      assert.match(failure, /PARQUET_VALUE_UNREPRESENTABLE/);
      assert.match(failure, /not a one-dimensional array: \{\{1,900001\},.*… \(cut\)/);
      assert.doesNotMatch(failure, /950000/, 'the end of the value is left out');
      await assertNoFileLeft('bad-wide');
    });
  });

  it('a value DuckDB refuses early in a large partition stops its COPY mid-stream: the run fails with the code, leaving no file, scratch or session', async () => {
    await admin().query(
      `DROP TABLE IF EXISTS pq.badbig; CREATE TABLE pq.badbig AS SELECT g AS id, repeat('x', 100) AS a, CASE WHEN g = 100 THEN 'infinity' ELSE date '2026-01-01' END AS d
         FROM generate_series(1, ${BIG_ROWS}) g`,
    );
    await withWorker(async ({ client, taskQueue }) => {
      const { failure } = await failureOf(client, taskQueue, 'pq.badbig', 'bad-big');
      assert.match(failure, /PARQUET_VALUE_UNREPRESENTABLE.*column d/);
      await assertNoFileLeft('bad-big');
    });
  });

  it('a row whose CSV text is over 8 MiB fails the run at once with PARQUET_ROW_TOO_LONG, quoting none of the row; no file is left', async () => {
    // About 9.8 MB of text on many lines in row 2 (TOAST compresses it in the table): DuckDB's message quotes all of those lines.
    await admin().query(
      `DROP TABLE IF EXISTS pq.toolong; CREATE TABLE pq.toolong AS SELECT g AS id, CASE WHEN g = 2 THEN repeat(E'secret-\\n', 1230000) ELSE 'short' END AS t FROM generate_series(1, 3) g`,
    );
    await withWorker(async ({ client, taskQueue }) => {
      const { failure, handle } = await failureOf(client, taskQueue, 'pq.toolong', 'too-long');
      assert.match(failure, /PARQUET_ROW_TOO_LONG/);
      assert.match(failure, /a row's CSV line is 98\d{5} bytes, more than the 8388608 a Parquet conversion reads/);
      assert.doesNotMatch(failure, /secret-/, 'no row data in the failure');
      const events = (await handle.fetchHistory()).events ?? [];
      const retried = events.filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
      assert.deepEqual(retried, [], 'not retried');
      assert.doesNotMatch(JSON.stringify(events), /secret-/, 'no row data in the history');
      await assertNoFileLeft('too-long');
    });
  });

  it('rows of 1 MiB, more of them than DuckDB may hold in one row group: the row groups close at a size instead, every value kept', async () => {
    const rows = 150;
    await admin().query(
      `DROP TABLE IF EXISTS pq.wide; CREATE TABLE pq.wide AS SELECT g AS id, repeat(md5(g::text), 32768) AS t FROM generate_series(1, ${rows}) g`,
    );
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(client, { table: 'pq.wide', partitions: 1, format: 'parquet', outDir: 'wide' }, { taskQueue });
      const manifest = await waitForManifest(handle);
      const duck = await (await DuckDBInstance.create(':memory:')).connect();
      const path = manifest.files[0]!.path;
      const read = await duck.runAndReadAll(`SELECT count(*)::int, count(*) FILTER (WHERE t = repeat(md5(id::text), 32768))::int FROM read_parquet('${path}')`);
      assert.deepEqual(read.getRows()[0], [rows, rows], 'every row, every value');
      const groups = await duck.runAndReadAll(`SELECT count(DISTINCT row_group_id)::int FROM parquet_metadata('${path}')`);
      assert.ok((groups.getRows()[0]![0] as number) > 1, 'more than one row group');
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('rows past the first CSV buffer (3 MiB) in a group of small tables, mid-table, last and alone: each such table is read again in its transaction, and every table keeps every row', async () => {
    // DuckDB fails on the mid-table row, but leaves out a last or only row past two buffers without an error.
    await admin().query(
      `DROP SCHEMA IF EXISTS pqlong CASCADE; CREATE SCHEMA pqlong;
       CREATE TABLE pqlong.a (id int PRIMARY KEY, t text); CREATE TABLE pqlong.b (id int PRIMARY KEY, t text);
       CREATE TABLE pqlong.c (id int PRIMARY KEY, t text); CREATE TABLE pqlong.d (id int PRIMARY KEY, t text);
       INSERT INTO pqlong.a SELECT g, CASE WHEN g = 500 THEN repeat(md5(g::text), 98304) ELSE md5(g::text) END FROM generate_series(1, 1000) g;
       INSERT INTO pqlong.b SELECT g, md5(g::text) FROM generate_series(1, 10) g;
       INSERT INTO pqlong.c SELECT g, CASE WHEN g = 1000 THEN repeat(md5(g::text), 98304) ELSE md5(g::text) END FROM generate_series(1, 1000) g;
       INSERT INTO pqlong.d VALUES (500, repeat(md5('500'), 98304))`,
    );
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(client, { schema: 'pqlong', format: 'parquet', outDir: 'long-row' }, { taskQueue });
      const manifest = await waitForManifest(handle);
      const tables = { 'pqlong.a': 1000, 'pqlong.b': 10, 'pqlong.c': 1000, 'pqlong.d': 1 };
      assert.deepEqual([...new Set(manifest.files.map((f) => f.table))].sort(), Object.keys(tables));
      const duck = await (await DuckDBInstance.create(':memory:')).connect();
      const longAt = (id: number) => `CASE WHEN id = ${id} THEN repeat(md5(id::text), 98304) ELSE md5(id::text) END`;
      const expected = { 'pqlong.a': longAt(500), 'pqlong.b': 'md5(id::text)', 'pqlong.c': longAt(1000), 'pqlong.d': longAt(500) };
      for (const [table, rows] of Object.entries(tables) as [keyof typeof tables, number][]) {
        const paths = manifest.files.filter((f) => f.table === table).map((f) => `'${f.path}'`);
        const read = await duck.runAndReadAll(
          `SELECT count(*)::int, count(*) FILTER (WHERE t = ${expected[table]})::int FROM read_parquet([${paths.join(', ')}])`,
        );
        assert.deepEqual(read.getRows()[0], [rows, rows], `${table}: every row, every value`);
      }
      // The copies run in the set's child workflows: none of their activities took a second attempt.
      const parent = (await handle.fetchHistory()).events ?? [];
      const children = parent.flatMap((e) => e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId ?? []);
      assert.ok(children.length > 0, 'the copies ran in child workflows');
      for (const child of children) {
        const events = (await client.workflow.getHandle(child).fetchHistory()).events ?? [];
        assert.deepEqual(
          events.filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1),
          [],
          'read again within the attempt, not retried',
        );
      }
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('cancelled while DuckDB converts the streaming COPY: the run aborts, its scratch folder and files are gone, its sessions closed', async () => {
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(client, { table: 'pq.big', partitions: 1, format: 'parquet', outDir: 'cancel-parquet' }, { taskQueue });
      const converting = async (): Promise<string | null> => {
        for (const folder of await scratchLeft()) {
          if ((await readdir(join(tmpdir(), folder)).catch((): string[] => [])).includes('rows-1.parquet')) return join(tmpdir(), folder);
        }
        return null;
      };
      let folder: string | null;
      while (!(folder = await converting())) await new Promise((r) => setTimeout(r, 10));
      // DuckDB converts while the COPY still streams (the README's "How it is written"): its CSV is a pipe, never a scratch file.
      assert.ok((await lstat(join(folder, 'rows-1.csv'))).isFIFO(), 'the CSV reaches DuckDB through a named pipe');
      await handle.cancel();
      await assert.rejects(handle.result(), WorkflowFailedError);
      await assertNoFileLeft('cancel-parquet');
    });
  });

  it('from the CLI: start --format parquet --compression none --row-group-rows 100000 --wait --json', async () => {
    await withWorker(async ({ taskQueue }) => {
      const env = liveCliEnv(taskQueue);
      const printed = await cliJson<{ workflowId: string; files: { path: string; rows: number }[] }>(
        ['start', '--table', 'pq.big', '--partitions', '1', '--format', 'parquet', '--compression', 'none', '--row-group-rows', '100000', '--wait', '--json'],
        env,
      );
      assert.match(printed.files[0]!.path, /part-0000\.parquet$/);
      const [read] = await pyarrowRead([printed.files[0]!.path]);
      // DuckDB fills row groups in whole vectors of 2048 rows: 100 352, 100 352 and the rest.
      assert.deepEqual([read!.codec, read!.rowGroups, read!.rows.length, printed.files[0]!.rows], ['UNCOMPRESSED', 3, BIG_ROWS, BIG_ROWS]);
      const committed = await cli(['commit', printed.workflowId, '--outcome', 'committed', '--json'], env);
      assert.equal(committed.code, 0, committed.stderr);
    });
  });

  it('bad option combinations: a coded error and exit 2 before anything starts', async () => {
    const env = { TEMPORAL_ADDRESS: live().temporal.address, PG_EXTRACT_TASK_QUEUE: 'nobody-listens' };
    for (const [args, code] of [
      [['--format', 'parquet', '--gzip'], 'FORMAT_OPTIONS_INVALID'],
      [['--format', 'csv', '--compression', 'snappy'], 'FORMAT_OPTIONS_INVALID'],
      [['--format', 'parquet', '--compression', 'gzip'], 'FORMAT_OPTIONS_INVALID'],
      [['--format', 'binary', '--row-group-rows', '1000'], 'FORMAT_OPTIONS_INVALID'],
      [['--format', 'parquet', '--target', 'x'], 'FORMAT_OPTIONS_INVALID'],
      [['--format', 'parquet', '--compression', 'lz4'], 'INPUT_INVALID'],
      [['--format', 'parquet', '--row-group-rows', '0'], 'INPUT_INVALID'],
    ] as const) {
      const result = await cli(['start', '--table', 'pq.t', ...args], env);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, new RegExp(`^error ${code}: `), args.join(' '));
    }
  });
});

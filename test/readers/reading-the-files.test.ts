/**
 * Every reader reads the files right: a CSV run of a table holding each type and the values that
 * break readers writes a data package that `frictionless validate` accepts, and the statement
 * `pg-extract reader --engine duckdb` prints reads every value back equal to the source.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { access, readFile, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import type { WorkflowHandle } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { projectRoot } from '../../devenv/project-root';
import type { DataPackage } from '../../src/readers/data-package';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { cli, liveCliEnv } from '../support/cli';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

const run = promisify(execFile);
const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );

/** Column, PostgreSQL type, DuckDB type, the six rows' values as SQL, and DuckDB's text of what it read (null for NULL). */
const COLUMNS: [string, string, string, string[], (string | null)[]][] = [
  [
    't',
    'text',
    'VARCHAR',
    [`NULL`, `''`, `'NULL'`, `E'\\\\N'`, `'NaN'`, `E'two\\nlines, "quoted", with, commas'`],
    [null, '', 'NULL', '\\N', 'NaN', 'two\nlines, "quoted", with, commas'],
  ],
  ['Mixed Case', 'text NOT NULL', 'VARCHAR', [`''`, `' '`, `'""'`, `','`, `'x'`, `E'\\r\\n'`], ['', ' ', '""', ',', 'x', '\r\n']],
  ['vc', 'varchar(10)', 'VARCHAR', [`'a'`, `NULL`, `''`, `'b'`, `'c'`, `'d'`], ['a', null, '', 'b', 'c', 'd']],
  ['i2', 'smallint', 'SMALLINT', [`-32768`, `32767`, `0`, `NULL`, `1`, `2`], ['-32768', '32767', '0', null, '1', '2']],
  [
    'i8',
    'bigint',
    'BIGINT',
    [`-9223372036854775808`, `9223372036854775807`, `0`, `NULL`, `1`, `2`],
    ['-9223372036854775808', '9223372036854775807', '0', null, '1', '2'],
  ],
  [
    'n',
    'numeric',
    'VARCHAR',
    [`'123456789012345678901234567890.123456789'`, `'NaN'`, `'Infinity'`, `'-Infinity'`, `NULL`, `'1e-30'`],
    ['123456789012345678901234567890.123456789', 'NaN', 'Infinity', '-Infinity', null, '0.000000000000000000000000000001'],
  ],
  [
    'n38',
    'numeric(38,2)',
    'DECIMAL(38,2)',
    [`'123456789012345678901234567890123456.78'`, `'-0.01'`, `0`, `NULL`, `1`, `'1.5'`],
    ['123456789012345678901234567890123456.78', '-0.01', '0.00', null, '1.00', '1.50'],
  ],
  [
    'n45',
    'numeric(45,5)',
    'VARCHAR',
    [`'1234567890123456789012345678901234567890.12345'`, `0`, `NULL`, `1`, `2`, `3`],
    ['1234567890123456789012345678901234567890.12345', '0.00000', null, '1.00000', '2.00000', '3.00000'],
  ],
  [
    'f8',
    'double precision',
    'DOUBLE',
    [`'NaN'`, `'Infinity'`, `'-Infinity'`, `'1.2345678901234567'`, `NULL`, `'-0'`],
    ['nan', 'inf', '-inf', '1.2345678901234567', null, '-0.0'],
  ],
  ['f4', 'real', 'FLOAT', [`'NaN'`, `'Infinity'`, `'-Infinity'`, `'3.4028235e38'`, `NULL`, `'0.1'`], ['nan', 'inf', '-inf', '3.4028235e+38', null, '0.1']],
  ['b', 'boolean', 'BOOLEAN', [`true`, `false`, `NULL`, `true`, `false`, `true`], ['true', 'false', null, 'true', 'false', 'true']],
  [
    'd',
    'date',
    'DATE',
    [`'infinity'`, `'-infinity'`, `'0044-03-15 BC'`, `'2026-12-03'`, `NULL`, `'0001-01-01 BC'`],
    ['infinity', '-infinity', '0044-03-15 (BC)', '2026-12-03', null, '0001-01-01 (BC)'],
  ],
  [
    'ts',
    'timestamp',
    'TIMESTAMP',
    [`'infinity'`, `'-infinity'`, `'0044-03-15 12:34:56.789 BC'`, `'2026-12-03 10:00:00.123456'`, `NULL`, `'1999-12-31 23:59:59'`],
    ['infinity', '-infinity', '0044-03-15 (BC) 12:34:56.789', '2026-12-03 10:00:00.123456', null, '1999-12-31 23:59:59'],
  ],
  [
    'tz',
    'timestamptz',
    'TIMESTAMP WITH TIME ZONE',
    [`'infinity'`, `'-infinity'`, `'0044-03-15 12:34:56.789+00 BC'`, `'2026-12-03 10:00:00.123456+02'`, `NULL`, `'1999-12-31 23:59:59+00'`],
    ['infinity', '-infinity', '0044-03-15 (BC) 12:34:56.789+00', '2026-12-03 08:00:00.123456+00', null, '1999-12-31 23:59:59+00'],
  ],
  [
    'iv',
    'interval',
    'INTERVAL',
    [`'1 year 2 mons 3 days 04:05:06.789'`, `'-1 days +02:00:00'`, `'00:00:00'`, `NULL`, `'-2 years -03:00:00'`, `'1 mon -1 days'`],
    ['1 year 2 months 3 days 04:05:06.789', '-1 day 02:00:00', '00:00:00', null, '-2 years -03:00:00', '1 month -1 day'],
  ],
  // A field restriction is a typmod written as words: still an interval.
  [
    'ivym',
    'interval year to month',
    'INTERVAL',
    [`'1 year 2 mons'`, `'-3 mons'`, `'0'`, `NULL`, `'14 mons'`, `'-1 year'`],
    ['1 year 2 months', '-3 months', '00:00:00', null, '1 year 2 months', '-1 year'],
  ],
  [
    'ivds',
    'interval day to second(3)',
    'INTERVAL',
    [`'1 day 00:00:01.23456'`, `'-00:00:01'`, `'0'`, `NULL`, `'2 days'`, `'36:00:00'`],
    ['1 day 00:00:01.235', '-00:00:01', '00:00:00', null, '2 days', '36:00:00'],
  ],
  ['by', 'bytea', 'BLOB', [`'\\x00ff'`, `'\\x'`, `NULL`, `'\\x5c4e'`, `'\\x2c22'`, `'\\x0a'`], ['\\x00\\xFF', '', null, '\\x5CN', ',\\x22', '\\x0A']],
  ['js', 'json', 'JSON', [`'{"a": [1, 2]}'`, `'"x"'`, `'null'`, `NULL`, `'1'`, `'[]'`], ['{"a": [1, 2]}', '"x"', 'null', null, '1', '[]']],
  ['jb', 'jsonb', 'JSON', [`'{"a": [1, 2]}'`, `'"x,y"'`, `'null'`, `NULL`, `'1'`, `'{}'`], ['{"a": [1, 2]}', '"x,y"', 'null', null, '1', '{}']],
  ['ia', 'int[]', 'INTEGER[]', [`'{1,2,NULL}'`, `'{}'`, `NULL`, `'{-1}'`, `'{1}'`, `'{2,3}'`], ['[1, 2, NULL]', '[]', null, '[-1]', '[1]', '[2, 3]']],
  [
    'ta',
    'text[]',
    // PostgreSQL leaves ', [, ] and ( unquoted in an array's text, which DuckDB's list cast takes for its own: text arrays stay text.
    'VARCHAR',
    [`E'{"a,b",NULL,"NULL","x\\\\"y","{z}",""}'`, `'{}'`, `NULL`, `'{" a "}'`, `'{it''s,x]}'`, `'{''a,b'',(c}'`],
    ['{"a,b",NULL,"NULL","x\\"y","{z}",""}', '{}', null, '{" a "}', "{it's,x]}", "{'a,b',(c}"],
  ],
  [
    'u',
    'uuid',
    'UUID',
    [`'00000000-0000-0000-0000-000000000001'`, `NULL`, `'ffffffff-ffff-ffff-ffff-ffffffffffff'`, `NULL`, `NULL`, `NULL`],
    ['00000000-0000-0000-0000-000000000001', null, 'ffffffff-ffff-ffff-ffff-ffffffffffff', null, null, null],
  ],
  ['e', 'dp.mood', "ENUM('sad', 'ok', 'happy')", [`'ok'`, `'happy'`, `NULL`, `'sad'`, `'ok'`, `'ok'`], ['ok', 'happy', null, 'sad', 'ok', 'ok']],
  // Domains read as their base types, with the typmod the domain declares.
  [
    'dn',
    'dp.amount',
    'DECIMAL(12,2)',
    [`'12.50'`, `NULL`, `'0'`, `'-1.25'`, `'9999999999.99'`, `'3'`],
    ['12.50', null, '0.00', '-1.25', '9999999999.99', '3.00'],
  ],
  ['de', 'dp.mood_d', "ENUM('sad', 'ok', 'happy')", [`'sad'`, `'ok'`, `NULL`, `'happy'`, `'ok'`, `'ok'`], ['sad', 'ok', null, 'happy', 'ok', 'ok']],
  ['other', 'inet', 'VARCHAR', [`'10.0.0.1/8'`, `NULL`, `'::1'`, `NULL`, `NULL`, `NULL`], ['10.0.0.1/8', null, '::1', null, null, null]],
];
const ROWS = 6;

/** Each column's name and type as the catalog has it, a domain's as its base type (one level: the domains here are over base types). */
async function columnTypes(schema: string, table: string): Promise<[string, string][]> {
  const r = await admin().query<{ name: string; type: string }>(
    `SELECT attname AS name, CASE WHEN typtype = 'd' THEN format_type(typbasetype, typtypmod) ELSE format_type(atttypid, atttypmod) END AS type
       FROM pg_attribute JOIN pg_type ON pg_type.oid = atttypid
      WHERE attrelid = format('%I.%I', $1::text, $2::text)::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [schema, table],
  );
  return r.rows.map((c) => [c.name, c.type]);
}

/** Runs `statement` in a fresh DuckDB: its column types, and each row's values as DuckDB's text, by id. */
async function duckdbRead(statement: string): Promise<{ types: Record<string, string>; rows: (string | null)[][] }> {
  const duck = await (await DuckDBInstance.create(':memory:')).connect();
  const query = statement.trim().replace(/;$/, '');
  const described = await duck.runAndReadAll(`DESCRIBE ${query}`);
  const types = Object.fromEntries(
    (described.getRowObjectsJson() as { column_name: string; column_type: string }[]).map((r) => [r.column_name, r.column_type]),
  );
  const read = await duck.runAndReadAll(`SELECT CAST(COLUMNS(*) AS VARCHAR) FROM (${query}) ORDER BY id`);
  return { types, rows: read.getRowsJson() as (string | null)[][] };
}

/** What DuckDB must read: the source's names and types, every value as the source holds it. */
function assertExact(read: { types: Record<string, string>; rows: (string | null)[][] }): void {
  assert.deepEqual(read.types, { id: 'BIGINT', ...Object.fromEntries(COLUMNS.map(([name, , type]) => [name, type])) });
  assert.equal(read.rows.length, ROWS);
  COLUMNS.forEach(([name, , , , expected], c) => {
    assert.deepEqual(
      read.rows.map((r) => r[c + 1]),
      expected,
      name,
    );
  });
}

async function start(taskQueue: string, request: ExtractionRequest): Promise<WorkflowHandle> {
  return startExtraction(live().temporal.client, request, { taskQueue });
}

describe('reading the files: data package and DuckDB reader (live)', function () {
  this.timeout(180_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  before(async () => {
    await admin().query(`DROP SCHEMA IF EXISTS dp CASCADE; CREATE SCHEMA dp; CREATE TYPE dp.mood AS ENUM ('sad', 'ok', 'happy');
      CREATE DOMAIN dp.amount AS numeric(12,2); CREATE DOMAIN dp.mood_d AS dp.mood`);
    await admin().query(`CREATE TABLE dp.t (id bigint PRIMARY KEY, ${COLUMNS.map(([name, type]) => `"${name}" ${type}`).join(', ')})`);
    for (let row = 0; row < ROWS; row++) {
      await admin().query(`INSERT INTO dp.t VALUES (${row + 1}, ${COLUMNS.map(([, , , values]) => values[row]).join(', ')})`);
    }
  });

  it('a CSV run writes datapackage.json next to its files, valid for frictionless; the DuckDB statement reads every value exactly', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table: 'dp.t', partitions: 2 });
      const manifest = await waitForManifest(handle);
      const receipt = manifest.dataPackage!;
      assert.equal(basename(receipt.path), 'datapackage.json');
      assert.equal(manifest.files.length, 2);
      for (const f of manifest.files) assert.equal(dirname(f.path), dirname(receipt.path), 'next to the files');
      const body = await readFile(receipt.path);
      assert.equal(receipt.bytes, body.length);
      assert.equal(receipt.sha256, createHash('sha256').update(body).digest('hex'));

      const pkg = JSON.parse(body.toString('utf8')) as DataPackage;
      assert.equal(pkg.resources.length, 1);
      const [resource] = pkg.resources;
      assert.equal(resource!.pgTable, 'dp.t');
      assert.deepEqual(resource!.path, ['part-0000.csv', 'part-0001.csv']);
      assert.deepEqual(resource!.dialect, { delimiter: ',', quoteChar: '"', doubleQuote: true, lineTerminator: '\n', header: true, nullSequence: '' });
      assert.deepEqual(resource!.schema!.primaryKey, ['id']);
      assert.deepEqual(resource!.schema!.missingValues, ['']);
      assert.deepEqual(
        resource!.schema!.fields.map((f) => [f.name, f.pgType]),
        await columnTypes('dp', 't'),
        "the exact PostgreSQL types (a domain's base type), in column order",
      );
      const field = (name: string) => resource!.schema!.fields.find((f) => f.name === name)!;
      assert.deepEqual([field('id').type, field('id').constraints], ['integer', { required: true }]);
      assert.deepEqual([field('Mixed Case').constraints, field('Mixed Case').missingValues], [{ required: true }, []], "NOT NULL: an empty field is ''");
      assert.deepEqual(
        ['n', 'n38', 'f8', 'd', 'tz', 'b', 'u'].map((n) => field(n).type),
        ['string', 'number', 'string', 'string', 'string', 'boolean', 'string'],
      );
      assert.deepEqual(field('e').constraints, { enum: ['sad', 'ok', 'happy'] });
      assert.deepEqual([field('dn').type, field('de').constraints], ['number', { enum: ['sad', 'ok', 'happy'] }], 'domains as their base types');

      const validated = await run(join(projectRoot(), '.venv', 'bin', 'frictionless'), ['validate', '--json', receipt.path]).catch(
        (err: { stdout: string }) => err,
      );
      const report = JSON.parse(validated.stdout) as { valid: boolean; tasks: { stats: { rows: number } }[] };
      assert.equal(report.valid, true, validated.stdout);
      assert.equal(report.tasks[0]!.stats.rows, ROWS);

      const env = liveCliEnv(taskQueue);
      const printed = await cli(['reader', handle.workflowId, '--engine', 'duckdb', '--table', 'dp.t'], env);
      assert.equal(printed.code, 0, printed.stderr);
      assert.equal(printed.stderr, '');
      assert.match(printed.stdout, /^SELECT [^;]*;\n$/, 'one statement and nothing else');
      assertExact(await duckdbRead(printed.stdout));

      // BC dates are the same instants, not only the same text: compare epochs with PostgreSQL's.
      const epochs = await admin().query<{ e: string[] }>(
        `SELECT ARRAY[(extract(epoch FROM d) * 1000000)::bigint::text, (extract(epoch FROM ts) * 1000000)::bigint::text, (extract(epoch FROM tz) * 1000000)::bigint::text] AS e
           FROM dp.t WHERE isfinite(d) ORDER BY id`,
      );
      const duck = await (await DuckDBInstance.create(':memory:')).connect();
      const duckEpochs = await duck.runAndReadAll(
        `SELECT [epoch_us(CAST(d AS TIMESTAMP))::VARCHAR, epoch_us(ts)::VARCHAR, epoch_us(tz)::VARCHAR] FROM (${printed.stdout.trim().replace(/;$/, '')}) WHERE isfinite(d) ORDER BY id`,
      );
      assert.deepEqual(
        duckEpochs.getRowsJson().map((r) => r[0]),
        epochs.rows.map((r) => r.e),
      );

      // A package changed since its receipt (same size): the statement is built from it, so the reader refuses it.
      const original = await readFile(receipt.path);
      const altered = Buffer.from(original);
      altered[altered.indexOf('"path"') + 1] = 'P'.charCodeAt(0);
      await writeFile(receipt.path, altered);
      const changed = await cli(['reader', handle.workflowId, '--engine', 'duckdb'], env);
      assert.deepEqual([changed.code, changed.stdout], [1, '']);
      assert.match(changed.stderr, /^error RUN_FILES_GONE: .*datapackage\.json does not match its manifest entry \(sha256\)/);
      await writeFile(receipt.path, original);

      // A file gone from a run that still holds them: the reader says so, and prints nothing.
      await unlink(manifest.files[1]!.path);
      const gone = await cli(['reader', handle.workflowId, '--engine', 'duckdb'], env);
      assert.deepEqual([gone.code, gone.stdout], [1, '']);
      assert.match(gone.stderr, /^error RUN_FILES_GONE: /);

      const terminal = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      assert.ok(terminal.filesDeleted.includes(receipt.path), 'the package is released with the files');
      assert.equal(await exists(receipt.path), false);
      const released = await cli(['reader', handle.workflowId, '--engine', 'duckdb'], env);
      assert.deepEqual([released.code, released.stdout], [1, '']);
      assert.match(released.stderr, /^error RUN_FILES_GONE: .*success/);
    });
  });

  it("a set's run writes one datapackage.json with a resource per table, types read in the snapshot; the reader picks a table", async () => {
    await admin().query(
      `DROP TABLE IF EXISTS dp.u; CREATE TABLE dp.u (id int PRIMARY KEY, t_id bigint REFERENCES dp.t, note text); INSERT INTO dp.u SELECT g, 1 + g % ${ROWS}, 'n' || g FROM generate_series(1, 40) g; DROP TABLE IF EXISTS dp."U"; CREATE TABLE dp."U" (id int PRIMARY KEY); INSERT INTO dp."U" VALUES (1), (2), (3)`,
    );
    await withWorker(async ({ taskQueue }) => {
      // dp."U" folds to the same resource name as dp.u: the package names it apart.
      const handle = await start(taskQueue, { tables: ['dp.t', 'dp.u', 'dp."U"'] });
      const manifest = await waitForManifest(handle);
      const receipt = manifest.dataPackage!;
      assert.ok(receipt, 'a set has a data package');
      for (const f of manifest.files) assert.equal(dirname(f.path), dirname(receipt.path), 'next to the files');
      const body = await readFile(receipt.path);
      assert.equal(receipt.sha256, createHash('sha256').update(body).digest('hex'));
      const pkg = JSON.parse(body.toString('utf8')) as DataPackage;
      assert.deepEqual(pkg.resources.map((r) => r.pgTable).sort(), ['dp.U', 'dp.t', 'dp.u']);
      assert.equal(new Set(pkg.resources.map((r) => r.name)).size, 3, `unique resource names: ${pkg.resources.map((r) => r.name).join(', ')}`);
      for (const resource of pkg.resources) {
        const files = manifest.files.filter((f) => f.table === resource.pgTable).map((f) => basename(f.path));
        assert.deepEqual(resource.path, files, `${resource.pgTable}: its own files, in partition order`);
        const [schema, table] = resource.pgTable.split('.');
        assert.deepEqual(
          resource.schema!.fields.map((f) => [f.name, f.pgType]),
          await columnTypes(schema!, table!),
          resource.pgTable,
        );
        assert.deepEqual(resource.schema!.primaryKey, ['id']);
      }
      const validated = await run(join(projectRoot(), '.venv', 'bin', 'frictionless'), ['validate', '--json', receipt.path]).catch(
        (err: { stdout: string }) => err,
      );
      const report = JSON.parse(validated.stdout) as { valid: boolean; tasks: { stats: { rows: number } }[] };
      assert.equal(report.valid, true, validated.stdout);
      assert.deepEqual(
        report.tasks.map((t) => t.stats.rows).sort((a, b) => a - b),
        [3, ROWS, 40],
      );

      const env = liveCliEnv(taskQueue);
      const unpicked = await cli(['reader', handle.workflowId, '--engine', 'duckdb'], env);
      assert.equal(unpicked.code, 2);
      assert.match(unpicked.stderr, /INPUT_INVALID: pick one table with --table/);
      const printed = await cli(['reader', handle.workflowId, '--engine', 'duckdb', '--table', 'dp.t'], env);
      assert.equal(printed.code, 0, printed.stderr);
      assertExact(await duckdbRead(printed.stdout));

      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      const result = (await handle.result()) as ExtractionResult;
      assert.ok(result.terminalReceipt.filesDeleted.includes(receipt.path), 'released with the files');
      await assert.rejects(access(receipt.path));
    });
  });

  it('one gzipped CSV file (whole COPY): the package says gz and the statement reads it exactly; a retained run keeps its package', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table: 'dp.t', partitions: 1, gzip: true, commitDeadlineMs: 60_000 });
      const manifest = await waitForManifest(handle);
      const pkg = JSON.parse(await readFile(manifest.dataPackage!.path, 'utf8')) as DataPackage;
      assert.deepEqual([pkg.resources[0]!.path, pkg.resources[0]!.compression], [['part-0000.csv.gz'], 'gz']);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'unknown' }] });
      const result = (await handle.result()) as ExtractionResult;
      assert.ok(result.terminalReceipt.filesRetained.includes(manifest.dataPackage!.path));
      const env = liveCliEnv(taskQueue);
      const printed = await cli(['reader', handle.workflowId, '--engine', 'duckdb'], env);
      assert.equal(printed.code, 0, printed.stderr);
      assertExact(await duckdbRead(printed.stdout));
    });
  });

  it('zstd CSV files (two partitions): the package says zst and why, and the DuckDB statement reads them exactly', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table: 'dp.t', partitions: 2, compression: 'zstd' });
      const manifest = await waitForManifest(handle);
      const [resource] = (JSON.parse(await readFile(manifest.dataPackage!.path, 'utf8')) as DataPackage).resources;
      assert.deepEqual([resource!.path, resource!.compression], [['part-0000.csv.zst', 'part-0001.csv.zst'], 'zst']);
      assert.match(resource!.description ?? '', /Frictionless names no zstd compression/);
      const env = liveCliEnv(taskQueue);
      const printed = await cli(['reader', handle.workflowId, '--engine', 'duckdb'], env);
      assert.equal(printed.code, 0, printed.stderr);
      assertExact(await duckdbRead(printed.stdout));
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('a binary run says its files are PostgreSQL binary COPY; the DuckDB reader refuses it with a code', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table: 'dp.t', partitions: 2, format: 'binary' });
      const manifest = await waitForManifest(handle);
      const [resource] = (JSON.parse(await readFile(manifest.dataPackage!.path, 'utf8')) as DataPackage).resources;
      assert.deepEqual([resource!.format, resource!.mediatype, resource!.dialect], ['pgcopy', 'application/vnd.postgresql.copy-binary', undefined]);
      const env = liveCliEnv(taskQueue);
      const refused = await cli(['reader', handle.workflowId, '--engine', 'duckdb'], env);
      assert.deepEqual([refused.code, refused.stdout], [1, '']);
      assert.match(refused.stderr, /^error READER_FORMAT_UNSUPPORTED: /);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
    });
  });

  it('a multi-dimensional array fails the DuckDB statement loudly rather than reading as a list of texts', async () => {
    await admin().query(`DROP TABLE IF EXISTS dp.grid; CREATE TABLE dp.grid (id int PRIMARY KEY, g int[]); INSERT INTO dp.grid VALUES (1, '{{1,2},{3,4}}')`);
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table: 'dp.grid', partitions: 1 });
      await waitForManifest(handle);
      const env = liveCliEnv(taskQueue);
      const printed = await cli(['reader', handle.workflowId, '--engine', 'duckdb'], env);
      assert.equal(printed.code, 0, printed.stderr);
      await assert.rejects(duckdbRead(printed.stdout), /not a one-dimensional array: \{\{1,2\},\{3,4\}\}/);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('bad input: an unknown engine or workflow is a coded error and nothing on stdout', async () => {
    const env = { TEMPORAL_ADDRESS: live().temporal.address, PG_EXTRACT_OUT_DIR: live().outRoot };
    const engine = await cli(['reader', 'any', '--engine', 'sqlite'], env);
    assert.deepEqual([engine.code, engine.stdout], [2, '']);
    assert.match(engine.stderr, /^error INPUT_INVALID: unknown engine "sqlite"/);
    const workflow = await cli(['reader', 'no-such-workflow', '--engine', 'duckdb'], env);
    assert.deepEqual([workflow.code, workflow.stdout], [2, '']);
    assert.match(workflow.stderr, /^error INPUT_INVALID: no workflow no-such-workflow/);
  });
});

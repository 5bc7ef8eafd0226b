/** The pg-extract CLI as a user runs it: a real process against the live Temporal server and PostgreSQL. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { promisify } from 'node:util';
import { CLI, cli, cliJson, liveCliEnv } from '../support/cli';
import { admin, filesDigest, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { bucketContents, s3Service } from '../support/s3';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

const run = promisify(execFile);

describe('pg-extract CLI (live)', function () {
  this.timeout(120_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('start --wait --json prints the manifest and its run id; commit --json prints the terminal receipt (a closed run its own, a run named by --run-id its own under a reused workflow id; an unknown one INPUT_INVALID); status reads the run', async () => {
    const table = await seedMixedTable('cli', 5_000);
    const expected = await tableDigest(`SELECT * FROM ${table}`);
    await withWorker(async ({ taskQueue }) => {
      const env = liveCliEnv(taskQueue);
      // Named in upper case, unquoted: the JSON names the table as the catalog does, as a run of several tables does.
      const doc = await cliJson(['start', '--table', table.toUpperCase(), '--partitions', '3', '--wait', '--json'], env);
      assert.deepEqual(Object.keys(doc).sort(), ['dataPackage', 'extractionReceipt', 'files', 'runId', 'tables', 'totals', 'workflowId']);
      assert.equal(doc.files.length, 3);
      for (const f of doc.files) assert.deepEqual(Object.keys(f).sort(), ['bytes', 'partition', 'path', 'range', 'rows', 'sha256', 'table']);
      assert.deepEqual(
        doc.files.map((f: { table: string }) => f.table),
        [table, table, table],
      );
      assert.deepEqual(doc.totals.rows, 5_000);
      assert.deepEqual(doc.tables, [{ table, rows: 5_000, bytes: doc.totals.bytes, files: 3 }], 'a one-table run lists its table too');
      assert.deepEqual(
        await filesDigest(
          table,
          doc.files.map((f: { path: string }) => f.path),
        ),
        expected,
      );
      assert.equal(doc.extractionReceipt.snapshotAuthority, 'postgresql.exported_snapshot');

      const status = await cli(['status', doc.workflowId, '--json'], env);
      assert.equal(JSON.parse(status.stdout).phase, 'awaiting_commit');

      const receipt = await cliJson(['commit', doc.workflowId, '--outcome', 'committed', '--json'], env);
      assert.deepEqual(Object.keys(receipt).sort(), [
        'cleanupAttempted',
        'cleanupErrorCode',
        'cleanupSucceeded',
        'decidedAt',
        'filesDeleted',
        'filesRetained',
        'outcome',
      ]);
      assert.equal(receipt.outcome, 'success');
      for (const f of doc.files) await assert.rejects(access(f.path));

      const again = await cli(['commit', doc.workflowId, '--outcome', 'failed', '--json'], env);
      assert.deepEqual(JSON.parse(again.stdout), receipt, 'a late report gets the same receipt');

      // A later run under the same workflow id: a report naming the first run reaches the first run (it decided the
      // second, whose files no one had loaded, before --run-id), and the second is decided by its own.
      const second = await cliJson(['start', '--table', table, '--partitions', '1', '--workflow-id', doc.workflowId, '--wait', '--json'], env);
      assert.notEqual(second.runId, doc.runId);
      const stale = await cliJson(['commit', doc.workflowId, '--run-id', doc.runId, '--outcome', 'committed', '--json'], env);
      assert.deepEqual(stale, receipt, "the first run's receipt");
      assert.equal(JSON.parse((await cli(['status', doc.workflowId, '--json'], env)).stdout).phase, 'awaiting_commit', 'the second run still waits');
      const own = await cliJson(['commit', doc.workflowId, '--run-id', second.runId, '--outcome', 'failed', '--json'], env);
      assert.equal(own.outcome, 'abort');

      const missing = await cli(['commit', `${doc.workflowId}-no-such-run`, '--outcome', 'committed'], env);
      assert.equal(missing.code, 2, missing.stderr);
      assert.match(missing.stderr, /^error INPUT_INVALID: no workflow /m);
    });
  });

  it('cancel --run-id reaches that run only; a closed run (named under a reused workflow id, or the latest) is refused with exit 2, and a later run goes on', async () => {
    const table = await seedMixedTable('clicancel', 1_000);
    await withWorker(async ({ taskQueue }) => {
      const env = liveCliEnv(taskQueue);
      const first = await cliJson(['start', '--table', table, '--partitions', '1', '--wait', '--json'], env);
      await cliJson(['commit', first.workflowId, '--run-id', first.runId, '--outcome', 'unknown', '--json'], env);
      const second = await cliJson(['start', '--table', table, '--partitions', '1', '--workflow-id', first.workflowId, '--wait', '--json'], env);
      // Before, cancel took no run id (meant for the first run, it reached the second and deleted the files its target owner
      // was loading), and a closed run's cancel printed 'cancel requested': the server takes one without a word.
      const stale = await cli(['cancel', first.workflowId, '--run-id', first.runId], env);
      assert.equal(stale.code, 2, stale.stderr);
      assert.match(stale.stderr, /^error INPUT_INVALID: /m);
      assert.equal(JSON.parse((await cli(['status', first.workflowId, '--json'], env)).stdout).phase, 'awaiting_commit', 'the later run goes on');
      for (const f of second.files) await access(f.path);
      const own = await cli(['cancel', first.workflowId, '--run-id', second.runId], env);
      assert.equal(own.code, 0, own.stderr);
      const aborted = await cliJson(['commit', first.workflowId, '--run-id', second.runId, '--outcome', 'committed', '--json'], env);
      assert.equal(aborted.outcome, 'abort', 'the run named was cancelled');
      const closed = await cli(['cancel', first.workflowId], env);
      assert.equal(closed.code, 2, closed.stderr);
      assert.match(closed.stderr, /^error INPUT_INVALID: .* has closed \(CANCELLED\): nothing to cancel/m);
      const bad = await cli(['cancel', first.workflowId, '--run-id', 'latest'], env);
      assert.equal(bad.code, 2, bad.stderr);
    });
  });

  it('start --wait shows progress: plain lines when not on a terminal, a redrawn bar with MB/s on one', async () => {
    const table = await seedMixedTable('cliprog', 5_000);
    await withWorker(async ({ taskQueue }) => {
      const env = liveCliEnv(taskQueue);
      const plain = await cli(['start', '--table', table, '--partitions', '3', '--wait', '--commit-deadline', '5'], env);
      assert.equal(plain.code, 0, plain.stderr);
      assert.match(plain.stderr, /^(planning|extracting) \d\/\d partitions, \d+ rows$/m);
      assert.match(plain.stderr, /3\/3 partitions, 5000 rows$/m);
      assert.match(plain.stdout, /total 5000 rows/);
      // `script` gives the CLI a pseudo-terminal, as a person's shell would.
      const command = [process.execPath, CLI, 'start', '--table', table, '--partitions', '3', '--wait', '--commit-deadline', '5']
        .map((a) => `'${a}'`)
        .join(' ');
      const tty = await run('script', ['-qec', command, '/dev/null'], { env: { ...process.env, ...env }, timeout: 60_000 });
      assert.match(tty.stdout, /\r\[#{20}\] \w+ 3\/3 partitions, 5,000 rows, [\d.]+ MB, [\d.]+ MB\/s/);
    });
  });

  const badStarts: [string, string[], string][] = [
    ['an injected table name', ['--table', 'public.t; DROP TABLE x'], 'IDENTIFIER_INVALID'],
    ['a table name with a quote', ['--table', `a'b`], 'IDENTIFIER_INVALID'],
    ['an injected key', ['--table', 'a.b', '--key', 'id) OR (1=1'], 'IDENTIFIER_INVALID'],
    ['an injected column', ['--table', 'a.b', '--columns', 'id,"x"";--'], 'IDENTIFIER_INVALID'],
    ['partitions 0', ['--table', 'a.b', '--partitions', '0'], 'INPUT_INVALID'],
    ['partitions -1', ['--table', 'a.b', '--partitions', '-1'], 'INPUT_INVALID'],
    ['partitions 2.5', ['--table', 'a.b', '--partitions', '2.5'], 'INPUT_INVALID'],
    ['partitions 10^9', ['--table', 'a.b', '--partitions', '1000000000'], 'INPUT_INVALID'],
    ['an unknown format', ['--table', 'a.b', '--format', 'xml'], 'INPUT_INVALID'],
    ['an output folder above the root', ['--table', 'a.b', '--out', '../../etc'], 'OUTPUT_PATH_ESCAPES_ROOT'],
    ['an absolute output folder elsewhere', ['--table', 'a.b', '--out', '/etc/cron.d'], 'OUTPUT_PATH_ESCAPES_ROOT'],
    ['a source name with a URL in it', ['--table', 'a.b', '--source', 'postgres://u:p@h/db'], 'INPUT_INVALID'],
    ['--gzip with --compression zstd', ['--table', 'a.b', '--gzip', '--compression', 'zstd'], 'FORMAT_OPTIONS_INVALID'],
    ['--gzip with --compression none', ['--table', 'a.b', '--format', 'binary', '--gzip', '--compression', 'none'], 'FORMAT_OPTIONS_INVALID'],
    ['a Parquet codec for csv files', ['--table', 'a.b', '--compression', 'snappy'], 'FORMAT_OPTIONS_INVALID'],
    ['compressed files for a stream', ['--table', 'a.b', '--target', 'x', '--via', 'stream', '--compression', 'zstd'], 'INPUT_INVALID'],
    ['an unknown size unit', ['--table', 'a.b', '--max-file-bytes', '12XB'], 'FILE_BOUND_INVALID'],
    ['a byte bound under 1 KiB', ['--table', 'a.b', '--max-file-bytes', '100'], 'FILE_BOUND_INVALID'],
    ['a negative byte bound', ['--table', 'a.b', '--max-file-bytes', '-5MB'], 'FILE_BOUND_INVALID'],
    ['a row bound of 0', ['--table', 'a.b', '--max-file-rows', '0'], 'FILE_BOUND_INVALID'],
    ['a row bound of 2.5', ['--table', 'a.b', '--max-file-rows', '2.5'], 'FILE_BOUND_INVALID'],
    ['a row bound that is not a number', ['--table', 'a.b', '--max-file-rows', 'many'], 'FILE_BOUND_INVALID'],
    ['file bounds with --via internal (no files)', ['--table', 'a.b', '--target', 'x', '--via', 'internal', '--max-file-rows', '10'], 'FILE_BOUND_INVALID'],
    ['--target-table without --target', ['--table', 'a.b', '--target-table', 'dst.b'], 'INPUT_INVALID'],
    ['--mode without --target', ['--table', 'a.b', '--mode', 'replace'], 'INPUT_INVALID'],
    ['a workflow id of 201 characters', ['--table', 'a.b', '--workflow-id', 'w'.repeat(201)], 'INPUT_INVALID'],
    // Refused by commander, reported as any bad input is.
    ['a partition count that is not a number', ['--table', 'a.b', '--partitions', 'abc'], 'INPUT_INVALID'],
    ['a negative commit deadline', ['--table', 'a.b', '--commit-deadline', '-5'], 'INPUT_INVALID'],
    ['an unknown option', ['--table', 'a.b', '--bogus'], 'INPUT_INVALID'],
  ];
  for (const [what, args, code] of badStarts) {
    it(`start rejects ${what} with ${code}, exit 2, before connecting anywhere`, async () => {
      // A closed port: a connection attempt would fail differently (TEMPORAL_UNREACHABLE).
      const r = await cli(['start', ...args], { TEMPORAL_ADDRESS: '127.0.0.1:1', PG_EXTRACT_OUT_DIR: live().outRoot });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^error ${code}: `, 'm'));
    });
  }

  it("an absolute --out is left to the worker when this shell names no output root (the worker's may be elsewhere)", async () => {
    const r = await cli(['start', '--table', 'a.b', '--out', '/srv/exports/nightly'], { TEMPORAL_ADDRESS: '127.0.0.1:1', PG_EXTRACT_OUT_DIR: '' });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^error TEMPORAL_UNREACHABLE: /m, 'past the input checks, to the connection');
  });

  it('a workflow id no run has (status, cancel, commit) or one a running run has (start): INPUT_INVALID, exit 2', async () => {
    const env = liveCliEnv(`nobody-polls-${Date.now()}`);
    for (const args of [
      ['status', 'no-such-run'],
      ['cancel', 'no-such-run'],
      ['commit', 'no-such-run', '--outcome', 'failed'],
    ]) {
      const r = await cli(args, env);
      assert.equal(r.code, 2, `${args[0]}: ${r.stderr}`);
      assert.match(r.stderr, /^error INPUT_INVALID: /m, args[0]);
    }
    const workflowId = `cli-taken-${Date.now()}`;
    const first = await cli(['start', '--table', 'a.b', '--workflow-id', workflowId], env);
    assert.equal(first.code, 0, first.stderr);
    try {
      const again = await cli(['start', '--table', 'a.b', '--workflow-id', workflowId], env);
      assert.equal(again.code, 2, again.stderr);
      assert.match(again.stderr, /^error INPUT_INVALID: .*give another --workflow-id/m);
    } finally {
      await live().temporal.client.workflow.getHandle(workflowId).terminate('no worker polls its queue');
    }
  });

  const badCommits: [string, string[]][] = [
    ['an unknown outcome', ['--outcome', 'maybe']],
    ['an inherited property name as outcome', ['--outcome', 'constructor']],
    ['__proto__ as outcome', ['--outcome', '__proto__']],
    ['an operation id of 201 characters', ['--outcome', 'committed', '--operation-id', 'x'.repeat(201)]],
    ['a run id that is no UUID', ['--outcome', 'committed', '--run-id', 'latest']],
  ];
  for (const [what, args] of badCommits) {
    it(`commit rejects ${what} with INPUT_INVALID, exit 2, before connecting anywhere`, async () => {
      const r = await cli(['commit', 'wf-1', ...args], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /^error INPUT_INVALID: /m);
    });
  }

  it('reader refuses a --table that is no table name with IDENTIFIER_INVALID, exit 2, before connecting anywhere', async () => {
    const r = await cli(['reader', 'wf-1', '--engine', 'duckdb', '--table', 'a.b.c'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^error IDENTIFIER_INVALID: /m);
  });

  it('start --target NAME --via internal loads inside one database with no files; --via without --target exits 2', async () => {
    const table = await seedMixedTable('clivia', 3_000);
    const expected = await tableDigest(`SELECT * FROM ${table}`);
    await admin().query(`CREATE TABLE clivia.copy (LIKE ${table})`);
    const lone = await cli(['start', '--table', table, '--via', 'internal']);
    assert.equal(lone.code, 2, lone.stderr);
    assert.match(lone.stderr, /INPUT_INVALID/);
    await withWorker(
      async ({ taskQueue }) => {
        const env = liveCliEnv(taskQueue);
        const doc = await cliJson(
          ['start', '--table', table, '--target', 'same', '--target-table', 'clivia.copy', '--via', 'internal', '--wait', '--json'],
          env,
        );
        assert.deepEqual(doc.files, [], 'no files');
        assert.equal(doc.extractionReceipt.snapshotAuthority, null, 'no snapshot claimed');
        assert.deepEqual(
          [doc.tables, doc.totals],
          [[{ table, rows: 3_000, bytes: 0, files: 0 }], { rows: 3_000, bytes: 0, tables: 1, files: 0 }],
          'its table, with the rows it moved',
        );
        assert.deepEqual(await tableDigest('SELECT * FROM clivia.copy'), expected);
      },
      { targets: { same: live().pg.url } },
    );
  });

  it('start --target NAME --via stream streams partitions into the target with no files', async () => {
    const table = await seedMixedTable('clistrm', 3_000);
    const expected = await tableDigest(`SELECT * FROM ${table}`);
    await admin().query(`CREATE TABLE clistrm.copy (LIKE ${table})`);
    await withWorker(
      async ({ taskQueue }) => {
        const env = liveCliEnv(taskQueue);
        const doc = await cliJson(
          ['start', '--table', table, '--partitions', '2', '--target', 'same', '--target-table', 'clistrm.copy', '--via', 'stream', '--wait', '--json'],
          env,
        );
        assert.deepEqual(doc.files, [], 'no files');
        assert.equal(doc.extractionReceipt.snapshotAuthority, 'postgresql.exported_snapshot');
        assert.deepEqual(
          [doc.tables, doc.totals],
          [[{ table, rows: 3_000, bytes: 0, files: 0 }], { rows: 3_000, bytes: 0, tables: 1, files: 0 }],
          'its table, with the rows it moved',
        );
        assert.deepEqual(await tableDigest('SELECT * FROM clistrm.copy'), expected);
      },
      { targets: { same: live().pg.url } },
    );
  });

  it('start --target NAME --wait waits for the load: a committed load prints its outcome and exits 0, a refused one exits with its code', async () => {
    const table = await seedMixedTable('cliload', 2_000);
    const expected = await tableDigest(`SELECT * FROM ${table}`);
    await admin().query(`CREATE TABLE cliload.copy (LIKE ${table})`);
    await withWorker(
      async ({ taskQueue }) => {
        const env = liveCliEnv(taskQueue);
        const doc = await cliJson(
          ['start', '--table', table, '--partitions', '2', '--target', 'same', '--target-table', 'cliload.copy', '--wait', '--json'],
          env,
        );
        assert.equal(doc.files.length, 2);
        assert.equal(doc.load.outcome, 'committed');
        assert.equal(doc.load.rows, 2_000);
        assert.equal(doc.terminalReceipt.outcome, 'success');
        assert.deepEqual(await tableDigest('SELECT * FROM cliload.copy'), expected, 'loaded when the command returns');

        const refused = await cli(['start', '--table', table, '--target', 'same', '--target-table', 'cliload.missing', '--wait'], env);
        assert.equal(refused.code, 2, refused.stderr);
        // The error line says why in words too: the load report's message.
        assert.match(
          refused.stderr,
          /error TABLE_NOT_FOUND: the load into same did not commit \(failed: table cliload\.missing does not exist or is not readable\); the run ended abort/,
        );
        assert.match(refused.stdout, /outcome abort/);
      },
      { targets: { same: live().pg.url } },
    );
  });

  it('start --out s3://bucket/prefix --compression zstd --wait --json lists .csv.zst objects with their ETag, the data package beside them', async () => {
    const table = await seedMixedTable('clis3', 2_000);
    const s3 = await s3Service();
    await s3.createBucket('pgx-cli');
    await withWorker(
      async ({ taskQueue }) => {
        const env = liveCliEnv(taskQueue);
        const doc = await cliJson(
          ['start', '--table', table, '--partitions', '2', '--out', 's3://pgx-cli/exports', '--compression', 'zstd', '--wait', '--json'],
          env,
        );
        for (const f of doc.files) {
          assert.match(f.path, /^s3:\/\/pgx-cli\/exports\/[^/]+\/attempt-1\/part-000\d\.csv\.zst$/);
          assert.match(f.etag, /^[0-9a-f]{32}(-\d+)?$/);
        }
        assert.match(doc.dataPackage.path, /^s3:\/\/pgx-cli\/exports\/.*\/datapackage\.json$/);
        const committed = await cli(['commit', doc.workflowId, '--outcome', 'committed', '--json'], env);
        assert.equal(JSON.parse(committed.stdout).cleanupSucceeded, true);
        assert.deepEqual(await bucketContents('pgx-cli', 'exports/'), { objects: [], uploads: [] });
      },
      { s3Env: s3.env },
    );
  });

  it('an unreachable Temporal server is reported with a code and a hint, exit 1', async () => {
    await admin().query('SELECT 1');
    const r = await cli(['status', 'wf-1'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error TEMPORAL_UNREACHABLE: /m);
  });
});

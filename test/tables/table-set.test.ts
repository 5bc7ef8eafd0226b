/**
 * Many tables at one snapshot, live: a schema (ordinary, partitioned, keyless tables; globs), a
 * list with a view, a big table split by size, one receipt for the run, each file naming its
 * table, the CLI's JSON, and bad sets refused with a code before any file exists.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import { Client } from 'pg';
import { extractionStatus, startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate, statusQuery } from '../../src/contract/definitions';
import { runOutputs } from '../../src/contract/run-outputs';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult, Manifest } from '../../src/contract/extraction-types';
import { type PgExtractError, causes } from '../../src/errors';
import { resolveTables } from '../../src/postgres/catalog';
import { printError } from '../../src/cli/errors';
import { failureChain } from '../support/failure-chain';
import { cli, cliJson, liveCliEnv } from '../support/cli';
import { type RowsDigest, admin, manifestDigest, settleSessions, tableDigest } from '../support/database';
import { eventually } from '../support/eventually';
import { live } from '../support/services';
import { stoppingBatch } from '../support/stopping-batch';
import { withWorker } from '../support/worker';
import { projectRoot } from '../../devenv/project-root';

const run = promisify(execFile);

/** Files of `table` in the manifest, digested the way tableDigest digests the table. */
async function tableFilesDigest(manifest: Manifest, table: string): Promise<RowsDigest> {
  return manifestDigest(table, { files: manifest.files.filter((f) => f.table === table) });
}

async function seedSet(): Promise<void> {
  await admin().query(`
    DROP SCHEMA IF EXISTS tset CASCADE; CREATE SCHEMA tset;
    CREATE TABLE tset.customers (id int PRIMARY KEY, name text);
    CREATE TABLE tset.orders (id bigint PRIMARY KEY, customer int REFERENCES tset.customers, amount numeric(12,2));
    CREATE TABLE tset.events (at timestamptz NOT NULL, v int) PARTITION BY RANGE (at);
    CREATE TABLE tset.events_2026 PARTITION OF tset.events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
    CREATE TABLE tset.notes (body text);
    CREATE TABLE tset.tmp_scratch (x int);
    CREATE VIEW tset.big_orders AS SELECT * FROM tset.orders WHERE amount > 100;
    INSERT INTO tset.customers SELECT g, 'c' || g FROM generate_series(1, 300) g;
    INSERT INTO tset.orders SELECT g, 1 + g % 300, g * 0.5 FROM generate_series(1, 5000) g;
    INSERT INTO tset.events SELECT timestamptz '2026-02-01' + g * interval '1 hour', g FROM generate_series(1, 2000) g;
    INSERT INTO tset.notes SELECT 'note ' || g FROM generate_series(1, 50) g;
  `);
}

describe('many tables at one snapshot (live Temporal + PostgreSQL)', function () {
  this.timeout(180_000);
  before(seedSet);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('schema with exclude: ordinary, partitioned and keyless tables, one snapshot and one receipt, every file names its table', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { schema: 'tset', exclude: ['tmp_*'] }, { taskQueue });
      const manifest = await waitForManifest(handle);
      const tables = ['tset.customers', 'tset.events', 'tset.notes', 'tset.orders'];
      assert.deepEqual(
        [...new Set(manifest.files.map((f) => f.table))].sort(),
        tables,
        'views and excluded tables are not taken; leaf partitions only through their parent',
      );
      for (const table of tables) assert.deepEqual(await tableFilesDigest(manifest, table), await tableDigest(`SELECT * FROM ${table}`), table);
      assert.ok(
        manifest.files.every((f) => f.snapshotDigest === manifest.snapshotDigest),
        'one snapshot seen by every file',
      );
      assert.equal(manifest.extractionReceipt!.snapshotAuthority, 'postgresql.exported_snapshot');
      assert.equal(manifest.extractionReceipt!.evidence.length, manifest.files.length, 'one receipt names every file');
      assert.equal(manifest.files[0]!.table, 'tset.orders', 'the biggest table first');
      const status = await handle.query(statusQuery);
      assert.deepEqual([status.tablesDone, status.tablesTotal, status.partitionsDone], [4, 4, manifest.files.length]);
      assert.equal(status.table, 'tset.*');
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('a list of tables may name a view; include narrows a schema (an empty exclude drops nothing)', async () => {
    await withWorker(async ({ taskQueue }) => {
      const listed = await waitForManifest(await startExtraction(live().temporal.client, { tables: ['tset.big_orders', 'tset.notes'] }, { taskQueue }));
      assert.deepEqual(listed.files.map((f) => f.table).sort(), ['tset.big_orders', 'tset.notes']);
      assert.deepEqual(await tableFilesDigest(listed, 'tset.big_orders'), await tableDigest('SELECT * FROM tset.big_orders'));
      const included = await waitForManifest(
        await startExtraction(live().temporal.client, { schema: 'tset', include: ['cust*', 'note?'], exclude: [] }, { taskQueue }),
      );
      assert.deepEqual(included.files.map((f) => f.table).sort(), ['tset.customers', 'tset.notes']);
    });
  });

  it('a table bigger than the split size is split into ranges; small ones stay one file; partitions in flight stay bounded', async () => {
    await admin().query(`
      DROP TABLE IF EXISTS tset.big; CREATE TABLE tset.big (id int PRIMARY KEY, pad text);
      INSERT INTO tset.big SELECT g, repeat(md5(g::text), 8) FROM generate_series(1, 260000) g;
      ANALYZE tset.big`);
    try {
      await withWorker(async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, { tables: ['tset.notes', 'tset.big'], maxInFlight: 2 }, { taskQueue });
        const manifest = await waitForManifest(handle);
        const big = manifest.files.filter((f) => f.table === 'tset.big');
        assert.ok(big.length >= 2, `big is split (${big.length} files)`);
        assert.ok(
          big.every((f) => f.range.kind === 'key'),
          'split on its primary key',
        );
        assert.deepEqual(
          manifest.files.filter((f) => f.table === 'tset.notes').map((f) => f.range),
          [{ kind: 'all' }],
        );
        assert.equal(manifest.files[0]!.table, 'tset.big', 'the biggest first');
        assert.deepEqual(await tableFilesDigest(manifest, 'tset.big'), await tableDigest('SELECT * FROM tset.big'));
        const { runId } = await handle.describe();
        const history = await live().temporal.client.workflow.getHandle(`${handle.workflowId}/${runId}/attempt-1/batch-0`).fetchHistory();
        let running = 0;
        let most = 0;
        const copies = new Set<string>();
        for (const e of history.events ?? []) {
          if (['copyPartition', 'copyTables'].includes(e.activityTaskScheduledEventAttributes?.activityType?.name ?? '')) {
            copies.add(String(e.eventId));
            most = Math.max(most, ++running);
          } else if (copies.has(String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? ''))) running--;
        }
        assert.ok(most <= 2, `at most 2 copies in flight (saw ${most})`);
      });
    } finally {
      await admin().query('DROP TABLE IF EXISTS tset.big');
    }
  });

  it('an inheritance parent gives its own rows, its child its own, as COPY and pg_dump do (a schema, and the parent alone in key ranges)', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS tinh CASCADE; CREATE SCHEMA tinh;
      CREATE TABLE tinh.parent (id int PRIMARY KEY, v text);
      CREATE TABLE tinh.child (extra int) INHERITS (tinh.parent);
      INSERT INTO tinh.parent SELECT g, 'p' || g FROM generate_series(1, 100) g;
      INSERT INTO tinh.child SELECT g, 'c' || g, g FROM generate_series(101, 300) g;
      ANALYZE tinh.parent; ANALYZE tinh.child`);
    try {
      await withWorker(async ({ taskQueue }) => {
        const set = await waitForManifest(await startExtraction(live().temporal.client, { schema: 'tinh' }, { taskQueue }));
        for (const table of ['tinh.parent', 'tinh.child']) {
          assert.deepEqual(await tableFilesDigest(set, table), await tableDigest(`SELECT * FROM ONLY ${table}`), table);
        }
        assert.equal(set.totals.rows, 300, 'every row once: 100 in the parent, 200 in the child');
        // A child locked exclusively does not hold up the parent: its own rows need no lock on the child.
        const locker = new Client({ connectionString: live().pg.url });
        await locker.connect();
        await locker.query('BEGIN; LOCK TABLE tinh.child IN ACCESS EXCLUSIVE MODE');
        let alone: Manifest;
        try {
          alone = await waitForManifest(
            await startExtraction(live().temporal.client, { table: 'tinh.parent', partitions: 2, timeouts: { lockTimeoutMs: 2000 } }, { taskQueue }),
          );
        } finally {
          await locker.end();
        }
        // Bounds and statistics of the parent's own ids (1–100), not the children's too (1–300): two halves, not 100 and 0.
        assert.deepEqual(
          alone.files.map((f) => f.rows >= 40 && f.rows <= 60),
          [true, true],
          JSON.stringify(alone.files.map((f) => f.rows)),
        );
        assert.deepEqual(await manifestDigest('tinh.parent', alone), await tableDigest('SELECT * FROM ONLY tinh.parent'));
      });
    } finally {
      await admin().query('DROP SCHEMA IF EXISTS tinh CASCADE');
    }
  });

  it('tables whose names need quoting (case, spaces, quotes, dashes, non-ASCII) are copied as themselves', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS "tName s" CASCADE; CREATE SCHEMA "tName s";
      CREATE TABLE "tName s"."Users" (id int PRIMARY KEY); INSERT INTO "tName s"."Users" SELECT generate_series(1, 3);
      CREATE TABLE "tName s".users (id int PRIMARY KEY); INSERT INTO "tName s".users SELECT generate_series(1, 5);
      CREATE TABLE "tName s"."order-items ""x""" (id int); INSERT INTO "tName s"."order-items ""x""" SELECT generate_series(1, 7);
      CREATE TABLE "tName s"."café" (id int); INSERT INTO "tName s"."café" SELECT generate_series(1, 11)`);
    try {
      await withWorker(async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, { schema: '"tName s"' }, { taskQueue });
        const manifest = await waitForManifest(handle);
        const rows: Record<string, number> = {};
        for (const f of manifest.files) rows[f.table!] = (rows[f.table!] ?? 0) + f.rows;
        assert.deepEqual(rows, { 'tName s.Users': 3, 'tName s.users': 5, 'tName s.order-items "x"': 7, 'tName s.café': 11 });
        const names = manifest.files.map((f) => basename(f.path).toLowerCase());
        assert.equal(new Set(names).size, names.length, `file names differ in any case: ${names.join(' ')}`);
        const quoted: [string, string][] = [
          ['tName s.Users', '"tName s"."Users"'],
          ['tName s.users', '"tName s".users'],
          ['tName s.order-items "x"', '"tName s"."order-items ""x"""'],
          ['tName s.café', '"tName s"."café"'],
        ];
        for (const [name, relation] of quoted) {
          const files = manifest.files.filter((f) => f.table === name);
          assert.deepEqual(await manifestDigest(relation, { files }), await tableDigest(`SELECT * FROM ${relation}`), name);
        }
        await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      });
    } finally {
      await admin().query('DROP SCHEMA "tName s" CASCADE');
    }
  });

  it('thirty small tables: copied in one group per lane, one session and one import each, one exact file per table', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS tgroup CASCADE; CREATE SCHEMA tgroup;
      DO $$ BEGIN FOR i IN 1..30 LOOP
        EXECUTE format('CREATE TABLE tgroup.%I (id int PRIMARY KEY, v text)', 't' || i);
        EXECUTE format('INSERT INTO tgroup.%I SELECT g, md5(g::text) FROM generate_series(1, %s) g', 't' || i, i * 10);
      END LOOP; END $$`);
    try {
      await withWorker(async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, { schema: 'tgroup', maxInFlight: 4 }, { taskQueue });
        const manifest = await waitForManifest(handle);
        assert.equal(manifest.files.length, 30, 'one file per table');
        for (let i = 1; i <= 30; i++)
          assert.deepEqual(await tableFilesDigest(manifest, `tgroup.t${i}`), await tableDigest(`SELECT * FROM tgroup.t${i}`), `tgroup.t${i}`);
        assert.equal(new Set(manifest.files.map((f) => f.backendPid)).size, 4, 'one session per group');
        assert.ok(manifest.files.every((f) => f.snapshotDigest === manifest.snapshotDigest));
        assert.equal(manifest.extractionReceipt!.evidence.length, 30);
        const { runId } = await handle.describe();
        const history = await live().temporal.client.workflow.getHandle(`${handle.workflowId}/${runId}/attempt-1/batch-0`).fetchHistory();
        const copies = (history.events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
        assert.deepEqual(copies, ['copyTables', 'copyTables', 'copyTables', 'copyTables'], 'one activity per group');
        const status = await handle.query(statusQuery);
        assert.deepEqual([status.tablesDone, status.partitionsDone], [30, 30]);
        await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      });
    } finally {
      await admin().query('DROP SCHEMA IF EXISTS tgroup CASCADE');
    }
  });

  it('progress shows while a copy batch runs: its finished groups count before the batch ends (status and CLI)', async () => {
    // Two groups (one per lane): one of a table alone, one ending with a view that takes seconds to read.
    await admin().query(`
      DROP SCHEMA IF EXISTS tprog CASCADE; CREATE SCHEMA tprog;
      CREATE TABLE tprog.a (id int PRIMARY KEY); INSERT INTO tprog.a SELECT generate_series(1, 2000);
      CREATE TABLE tprog.b (id int PRIMARY KEY); INSERT INTO tprog.b SELECT generate_series(1, 1000);
      CREATE VIEW tprog.slow AS SELECT x, pg_sleep(0.5) IS NULL AS slept FROM generate_series(1, 8) x;
    `);
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { tables: ['tprog.a', 'tprog.b', 'tprog.slow'], maxInFlight: 2 }, { taskQueue });
      const running = await eventually(async () => {
        const own = await handle.query(statusQuery);
        const seen = await extractionStatus(live().temporal.client, handle.workflowId);
        return own.batchWorkflowId && own.partitionsDone === 0 && (seen.partitionsDone ?? 0) > 0 && seen.workflowStatus === 'RUNNING' ? { own, seen } : null;
      }, 'a finished group counted while its batch still runs');
      assert.equal(running.seen.partitionsTotal, 3);
      assert.ok(running.seen.rows >= 1000, `rows of a finished group: ${running.seen.rows}`);
      const env = liveCliEnv(taskQueue);
      const shown = await cli(['status', handle.workflowId, '--json'], env);
      assert.ok(JSON.parse(shown.stdout).partitionsDone >= 1, shown.stdout);
      const manifest = await waitForManifest(handle);
      const done = await handle.query(statusQuery);
      assert.deepEqual([done.partitionsDone, done.rows, done.batchWorkflowId], [3, manifest.totals.rows, null], 'counted once the batch ended');
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('a copy that fails names the table and partition it was reading (in a group of small tables, and alone), as the CLI prints it', async () => {
    // One group (one lane): a plain table and a view that fails on its third row. Its words alone ("division by zero")
    // would not say which of a run's tables to look at.
    await admin().query(`
      DROP SCHEMA IF EXISTS tnamed CASCADE; CREATE SCHEMA tnamed;
      CREATE TABLE tnamed.fine (id int PRIMARY KEY); INSERT INTO tnamed.fine SELECT generate_series(1, 100);
      CREATE VIEW tnamed.broken AS SELECT x, 1 / (x - 3) AS y FROM generate_series(1, 5) x;
    `);
    await withWorker(async ({ taskQueue }) => {
      const requests: ExtractionRequest[] = [{ tables: ['tnamed.fine', 'tnamed.broken'], maxInFlight: 1 }, { table: 'tnamed.broken' }];
      for (const request of requests) {
        const handle = await startExtraction(live().temporal.client, { ...request, partitionRetry: { maximumAttempts: 1 } }, { taskQueue });
        const err = await handle.result().then(
          () => assert.fail('the run failed'),
          (e: unknown) => e,
        );
        const lines: string[] = [];
        const original = console.error;
        console.error = (line: string) => lines.push(line);
        try {
          printError(err);
        } finally {
          console.error = original;
        }
        assert.equal(lines[0], 'error SQLSTATE_22012: tnamed.broken (partition 0): division by zero', JSON.stringify(request));
      }
    });
  });

  it('a copy that fails for good stops the others of its batch at once: the slow one is cancelled, not waited for', async () => {
    const request = await stoppingBatch('tstop');
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, request, { taskQueue });
      await assert.rejects(handle.result(), (err: unknown) => {
        assert.match(failureChain(err), /SQLSTATE_22012/);
        return true;
      });
      const parent = (await handle.fetchHistory()).events ?? [];
      const [batchId] = parent.flatMap((e) => e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId ?? []);
      const batch = (await live().temporal.client.workflow.getHandle(batchId!).fetchHistory()).events ?? [];
      const copies = batch.filter((e) => e.activityTaskScheduledEventAttributes).length;
      assert.equal(copies, 2, 'one copy per group');
      assert.equal(batch.filter((e) => e.activityTaskCancelRequestedEventAttributes).length, 1, 'the slow copy was cancelled');
      assert.equal(batch.filter((e) => e.activityTaskCompletedEventAttributes).length, 0, 'no copy ran to its end');
    });
  });

  it("the coordinator's backend terminated mid-run → the whole set again from one fresh snapshot", async () => {
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, { schema: 'tset', maxInFlight: 1 }, { taskQueue });
        // Planned and copying: the batch is running when the snapshot dies.
        while ((await handle.query(statusQuery)).partitionsTotal === 0) await new Promise((r) => setTimeout(r, 10));
        const killed = await admin().query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator'`);
        assert.equal(killed.rowCount, 1);
        const manifest = await waitForManifest(handle);
        for (const table of ['tset.customers', 'tset.orders'])
          assert.deepEqual(await tableFilesDigest(manifest, table), await tableDigest(`SELECT * FROM ${table}`), table);
        // The lost attempt's files, its data package among them (written beside the copy), were discarded; the last attempt's are there.
        const lastFolder = dirname(manifest.files[0]!.path);
        assert.ok((await readdir(lastFolder)).includes('datapackage.json'), `the package in ${lastFolder}`);
        const lostFolder = lastFolder.replace(/\/attempt-2$/, '/attempt-1');
        assert.deepEqual(await readdir(lostFolder).catch(() => []), [], `nothing left in ${lostFolder}`);
        await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
        const result = (await handle.result()) as ExtractionResult;
        assert.deepEqual(
          result.attempts.map((a) => a.result),
          ['snapshot_lost', 'completed'],
        );
        assert.equal(manifest.attempt, 2);
        assert.ok(
          manifest.files.every((f) => f.snapshotDigest === manifest.snapshotDigest && f.name.includes('/attempt-2/')),
          'one fresh snapshot, files of the last attempt only',
        );
      },
      { maxConcurrentActivities: 1 },
    );
  });

  it('a table dropped after the snapshot, before the holder could lock it: the schema is planned again on a fresh snapshot without it; a list naming it fails with TABLE_NOT_FOUND', async () => {
    // Failed with SQLSTATE_42P01 ("relation does not exist") before: a busy schema's scratch table made the run fail.
    const cases: [Omit<ExtractionRequest, 'source'>, 'completed' | 'TABLE_NOT_FOUND'][] = [
      [{ schema: 'tgone' }, 'completed'],
      [{ tables: ['tgone.keep', 'tgone.gone'] }, 'TABLE_NOT_FOUND'],
    ];
    for (const [request, ends] of cases) {
      await admin().query(`DROP SCHEMA IF EXISTS tgone CASCADE; CREATE SCHEMA tgone;
        CREATE TABLE tgone.keep (id int PRIMARY KEY); INSERT INTO tgone.keep SELECT generate_series(1, 100);
        CREATE TABLE tgone.gone (id int PRIMARY KEY); INSERT INTO tgone.gone SELECT generate_series(1, 100)`);
      // The holder finds both tables in its snapshot, then waits behind this lock; the table is dropped while it waits.
      const dropper = new Client({ connectionString: live().pg.url });
      await dropper.connect();
      try {
        await dropper.query('BEGIN; LOCK TABLE tgone.gone IN ACCESS EXCLUSIVE MODE');
        await withWorker(async ({ taskQueue }) => {
          const handle = await startExtraction(live().temporal.client, request, { taskQueue });
          const holderWaits = async () =>
            (
              await admin().query(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator' AND wait_event_type = 'Lock'`,
              )
            ).rows[0].n === 1;
          await eventually(holderWaits, 'the holder waiting for its lock');
          await dropper.query('DROP TABLE tgone.gone; COMMIT');
          if (ends === 'TABLE_NOT_FOUND') {
            await assert.rejects(handle.result(), (err: unknown) => [...causes(err)].some((e) => (e as { type?: string }).type === 'TABLE_NOT_FOUND'));
            return;
          }
          const manifest = await waitForManifest(handle);
          assert.deepEqual([...new Set(manifest.files.map((f) => f.table))], ['tgone.keep']);
          assert.equal(manifest.totals.rows, 100);
          await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
          const result = (await handle.result()) as ExtractionResult;
          assert.deepEqual(
            result.attempts.map((a) => [a.result, a.reason]),
            [
              ['snapshot_lost', 'SNAPSHOT_LOST'],
              ['completed', null],
            ],
          );
        });
      } finally {
        await dropper.end();
      }
    }
    await admin().query('DROP SCHEMA tgone CASCADE');
  });

  it('start --schema --wait --json prints files[] with their table, tables[] and totals', async () => {
    await withWorker(async ({ taskQueue }) => {
      const env = liveCliEnv(taskQueue);
      const doc = await cliJson(['start', '--schema', 'tset', '--exclude', 'tmp_*', '--exclude', 'events', '--commit-deadline', '5', '--wait', '--json'], env);
      assert.deepEqual(Object.keys(doc.files[0]).sort(), ['bytes', 'partition', 'path', 'range', 'rows', 'sha256', 'table']);
      assert.deepEqual(doc.tables.map((t: { table: string }) => t.table).sort(), ['tset.customers', 'tset.notes', 'tset.orders']);
      const orders = doc.tables.find((t: { table: string }) => t.table === 'tset.orders');
      assert.deepEqual({ rows: orders.rows, files: orders.files }, { rows: 5000, files: 1 });
      assert.deepEqual(doc.totals, { rows: 5350, bytes: doc.files.reduce((n: number, f: { bytes: number }) => n + f.bytes, 0), tables: 3, files: 3 });
    });
  });

  const refused: [string, ExtractionRequest, RegExp][] = [
    ['a name that does not exist', { tables: ['tset.orders', 'tset.nope'] }, /TABLE_NOT_FOUND/],
    ['an include pattern that matches no table', { schema: 'tset', include: ['zz*'] }, /PATTERN_UNMATCHED/],
    ['an exclude pattern that matches no table', { schema: 'tset', exclude: ['zz*'] }, /PATTERN_UNMATCHED/],
    ['an empty schema', { schema: 'tset_empty' }, /SCHEMA_EMPTY/],
    [
      'a schema holding only a partition of a table elsewhere',
      { schema: 'tset_parts' },
      /SCHEMA_EMPTY: schema tset_parts holds only partitions \(1\) of tables in other schemas/,
    ],
    [
      'a partitioned table and one of its partitions, whose rows it reads',
      { tables: ['tset_parts.events_2030', 'tset.customers', 'tset.events'] },
      /TABLE_DUPLICATE: tset_parts\.events_2030 is a partition of tset\.events, which the list also names/,
    ],
  ];
  for (const [what, request, code] of refused) {
    it(`${what} fails the run with ${code.source.split(':')[0]} before any file exists`, async () => {
      await admin().query(`DROP SCHEMA IF EXISTS tset_empty; CREATE SCHEMA tset_empty; DROP SCHEMA IF EXISTS tset_parts CASCADE; CREATE SCHEMA tset_parts;
        CREATE TABLE tset_parts.events_2030 PARTITION OF tset.events FOR VALUES FROM ('2030-01-01') TO ('2031-01-01')`);
      const outDir = `tset-refused-${Math.random().toString(36).slice(2)}`;
      await withWorker(async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, { ...request, outDir }, { taskQueue });
        await assert.rejects(handle.result(), (err: unknown) => err instanceof WorkflowFailedError && code.test(failureChain(err)));
      });
      await admin().query('DROP SCHEMA tset_parts CASCADE');
      assert.deepEqual(await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []), [], 'no file or folder');
    });
  }

  it('a table with no columns: csv and binary hold a row per row, as COPY writes them; DuckDB reads none; Parquet refuses it, and a table whose column names differ only in case, before any file', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS tnocols CASCADE; CREATE SCHEMA tnocols;
      CREATE TABLE tnocols.marks (); INSERT INTO tnocols.marks SELECT FROM generate_series(1, 3);
      CREATE TABLE tnocols.named (id int PRIMARY KEY); INSERT INTO tnocols.named VALUES (1)`);
    try {
      await withWorker(async ({ taskQueue }) => {
        const marks = async (request: ExtractionRequest) => {
          const handle = await startExtraction(live().temporal.client, request, { taskQueue });
          const file = (await waitForManifest(handle)).files.find((f) => f.table === 'tnocols.marks')!;
          return { handle, rows: file.rows, bytes: await readFile(file.path) };
        };
        const csv = await marks({ schema: 'tnocols' });
        assert.deepEqual([csv.rows, csv.bytes.toString()], [3, '\n\n\n\n'], 'the header line and an empty line per row');
        const pkg = (await waitForManifest(csv.handle)).dataPackage!.path;
        const validated = await run(join(projectRoot(), '.venv', 'bin', 'frictionless'), ['validate', '--json', pkg]).catch((err: { stdout: string }) => err);
        // Frictionless reads any CSV as a table: the package is sound, and its one complaint is the rows with no values.
        const report = JSON.parse(validated.stdout) as { tasks: { errors: { type: string }[] }[] };
        assert.deepEqual(
          report.tasks.flatMap((t) => t.errors.map((e) => e.type)),
          ['blank-row', 'blank-row', 'blank-row'],
          validated.stdout,
        );
        const refused = await cli(['reader', csv.handle.workflowId, '--engine', 'duckdb', '--table', 'tnocols.marks'], liveCliEnv(taskQueue));
        assert.match(refused.stderr, /^error READER_FORMAT_UNSUPPORTED: "?tnocols"?\.?"?marks"? has no columns/);
        const binary = await marks({ schema: 'tnocols', format: 'binary' });
        // The 19-byte PGCOPY header, three tuples of no fields (an int16 0 each), the trailer (int16 -1).
        assert.deepEqual([binary.rows, binary.bytes.length, binary.bytes.subarray(19).toString('hex')], [3, 27, '000000000000ffff']);
        for (const { handle } of [csv, binary]) await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
        const outDir = `tnocols-${Math.random().toString(36).slice(2)}`;
        const parquet = await startExtraction(live().temporal.client, { schema: 'tnocols', format: 'parquet', outDir }, { taskQueue });
        await assert.rejects(parquet.result(), (err: unknown) => {
          const cause = JSON.stringify((err as WorkflowFailedError).cause);
          return err instanceof WorkflowFailedError && /FORMAT_OPTIONS_INVALID/.test(cause) && /tnocols\.marks has no columns/.test(cause);
        });
        assert.deepEqual(await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []), [], 'no file or folder');
        // Two column names that differ only in case are one to DuckDB, which writes the Parquet file.
        await admin().query(`CREATE TABLE tnocols.cased ("A" int, a int); INSERT INTO tnocols.cased VALUES (1, 2)`);
        const casedDir = `${outDir}-cased`;
        const cased = await startExtraction(live().temporal.client, { tables: ['tnocols.cased'], format: 'parquet', outDir: casedDir }, { taskQueue });
        await assert.rejects(cased.result(), (err: unknown) => {
          const cause = JSON.stringify((err as WorkflowFailedError).cause);
          return err instanceof WorkflowFailedError && /FORMAT_OPTIONS_INVALID/.test(cause) && /tnocols\.cased has columns/.test(cause);
        });
        assert.deepEqual(await readdir(join(live().outRoot, casedDir), { recursive: true }).catch(() => []), [], 'no file or folder');
      });
    } finally {
      await admin().query('DROP SCHEMA tnocols CASCADE');
    }
  });

  it('binary refuses a column whose type has no binary form (aclitem, an array, a domain, a composite or a range of one) before any file, in a set, a held snapshot and a one-session copy; csv, and leaving it out, pass', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS tnosend CASCADE; CREATE SCHEMA tnosend;
      CREATE DOMAIN tnosend.grant AS aclitem;
      CREATE TYPE tnosend.holder AS (who text, acl aclitem);
      CREATE TYPE tnosend.holders AS (list tnosend.holder[], n int);
      -- seg (contrib) has no binary form either, and unlike aclitem it orders, so it can be a range's subtype.
      CREATE EXTENSION seg SCHEMA tnosend;
      CREATE TYPE tnosend.seg_range AS RANGE (subtype = tnosend.seg, multirange_type_name = tnosend.seg_ranges);
      CREATE TYPE tnosend.pair AS (a int4range, b int);
      CREATE TABLE tnosend.grants (id int PRIMARY KEY, acl aclitem, acls aclitem[], via tnosend.grant[], note text,
        holder tnosend.holder, holders tnosend.holders, span tnosend.seg_range, spans tnosend.seg_ranges, pair tnosend.pair);
      INSERT INTO tnosend.grants VALUES (1, 'postgres=r/postgres', '{postgres=r/postgres}', '{postgres=w/postgres}', 'n', NULL, NULL, NULL, NULL, '("[1,2)",3)');
      CREATE TABLE tnosend.plain (id int PRIMARY KEY); INSERT INTO tnosend.plain VALUES (1)`);
    const client = await admin().connect();
    try {
      // The one query names every such column, at any depth (a domain's array, a composite's array's attribute, a
      // multirange's range's subtype), and only those chosen: a composite of a range of int4 has a binary form.
      await assert.rejects(resolveTables(client, [{ schema: 'tnosend', table: 'grants' }], { readRows: true, format: 'binary' }), (err: unknown) => {
        const { code, message } = err as PgExtractError;
        return (
          code === 'FORMAT_OPTIONS_INVALID' &&
          message.startsWith(
            'tnosend.grants.acl (aclitem), tnosend.grants.acls (aclitem[]), tnosend.grants.via (tnosend."grant"[]), tnosend.grants.holder (tnosend.holder), ' +
              'tnosend.grants.holders (tnosend.holders), tnosend.grants.span (tnosend.seg_range), tnosend.grants.spans (tnosend.seg_ranges) have types with no binary form',
          )
        );
      });
      const chosen = await resolveTables(client, [{ schema: 'tnosend', table: 'grants', columns: ['id', 'note', 'pair'] }], {
        readRows: true,
        format: 'binary',
      });
      assert.deepEqual(
        chosen[0]!.columns.map((c) => c.name),
        ['id', 'note', 'pair'],
      );
      assert.equal((await resolveTables(client, [{ schema: 'tnosend', table: 'grants' }], { readRows: true }))[0]!.columns.length, 10, 'csv resolves them');
    } finally {
      client.release();
    }
    try {
      await withWorker(async ({ taskQueue }) => {
        const outDir = `tnosend-${Math.random().toString(36).slice(2)}`;
        for (const request of [
          { schema: 'tnosend' },
          { table: 'tnosend.grants', partitions: 2 },
          { table: 'tnosend.grants', partitions: 1 },
        ] satisfies ExtractionRequest[]) {
          const handle = await startExtraction(live().temporal.client, { ...request, format: 'binary', outDir }, { taskQueue });
          await assert.rejects(handle.result(), (err: unknown) => {
            const cause = JSON.stringify((err as WorkflowFailedError).cause);
            return err instanceof WorkflowFailedError && /FORMAT_OPTIONS_INVALID/.test(cause) && /tnosend\.grants\.acl \(aclitem\)/.test(cause);
          });
          const { events } = await handle.fetchHistory();
          const tries = events!.filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt);
          assert.ok(
            tries.every((n) => n === 1),
            `${JSON.stringify(request)}: no step was tried again (${JSON.stringify(tries)})`,
          );
          assert.deepEqual(await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []), [], 'no file or folder');
        }
        const handle = await startExtraction(
          live().temporal.client,
          { table: 'tnosend.grants', columns: ['id', 'note', 'pair'], format: 'binary', outDir },
          { taskQueue },
        );
        assert.equal((await waitForManifest(handle)).files[0]!.rows, 1);
        await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
        assert.equal((await handle.result()).terminalReceipt.outcome, 'success');
      });
    } finally {
      await admin().query('DROP SCHEMA tnosend CASCADE');
    }
  });

  it("a run reset to its last workflow task (as Temporal's Web UI resets) replays, keeps its files, and a commit releases them", async () => {
    // Before, its child batch's id, folders and load operation were named by the run id a reset changes:
    // the new run's replay failed every workflow task (nondeterminism), and it never decided.
    await withWorker(async ({ taskQueue }) => {
      const client = live().temporal.client;
      const outDir = `reset-${Math.random().toString(36).slice(2)}`;
      const handle = await startExtraction(client, { tables: ['tset.customers', 'tset.orders'], outDir }, { taskQueue });
      const manifest = await waitForManifest(handle);
      const { runId } = await handle.describe();
      const lastTask = ((await handle.fetchHistory()).events ?? []).filter((e) => e.workflowTaskCompletedEventAttributes).at(-1)!;
      const { runId: resetRunId } = await client.workflowService.resetWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId: handle.workflowId, runId },
        reason: 'test: reset to the last workflow task',
        workflowTaskFinishEventId: lastTask.eventId,
        requestId: randomUUID(),
      });
      assert.ok(resetRunId && resetRunId !== runId, 'a new run');
      const reset = client.workflow.getHandle(handle.workflowId, resetRunId!);
      // The new run runs its last workflow task again; a report that reaches it before then finds it still extracting.
      await eventually(async () => (await reset.query(statusQuery)).phase === 'awaiting_commit', 'the reset run awaits the commit again');
      const receipt = await reset.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      assert.deepEqual([receipt.outcome, receipt.cleanupSucceeded], ['success', true]);
      assert.deepEqual([...receipt.filesDeleted].sort(), runOutputs(manifest).sort(), "every file of the run's first run released");
      const events = (await reset.fetchHistory()).events ?? [];
      // The reset itself is recorded as a failed workflow task (its failure says reset); nothing else failed.
      const failed = events.filter((e) => e.workflowTaskFailedEventAttributes && !e.workflowTaskFailedEventAttributes.failure?.resetWorkflowFailureInfo);
      assert.deepEqual(failed, [], 'no workflow task failed');
      assert.deepEqual(await readdir(join(live().outRoot, outDir), { recursive: true }).catch(() => []), [], 'nothing left');
    });
  });

  it('the CLI refuses a table named twice (or two that read alike unquoted), and table with schema, before connecting anywhere', async () => {
    const env = { TEMPORAL_ADDRESS: '127.0.0.1:1', PG_EXTRACT_OUT_DIR: live().outRoot };
    const twice = await cli(['start', '--tables', 'tset.orders,tset.customers,TSET.orders'], env);
    assert.equal(twice.code, 2, twice.stderr);
    assert.match(twice.stderr, /TABLE_DUPLICATE/);
    const alike = await cli(['start', '--tables', '"a.b".c,a."b.c"'], env);
    assert.equal(alike.code, 2, alike.stderr);
    assert.match(alike.stderr, /TABLE_DUPLICATE.*"a\.b"\.c and a\."b\.c" are both a\.b\.c in a run's manifest/);
    const both = await cli(['start', '--table', 'tset.orders', '--schema', 'tset'], env);
    assert.equal(both.code, 2, both.stderr);
    assert.match(both.stderr, /INPUT_INVALID/);
    const stray = await cli(['start', '--tables', 'tset.orders', '--include', 'x*'], env);
    assert.match(stray.stderr, /include narrows a schema/);
  });
});

/**
 * What the bench times (./run.ts runs them, interleaved): the baselines (server COPY to /dev/null,
 * psql \copy, hand-split parallel psql, pg_dump -j2, pgcopydb, DuckDB's PostgreSQL scanner to
 * Parquet) and our workflow runs on the bench's worker, each a {@link Method} whose `once` is one
 * timed run. A baseline whose tool is not installed is left out with a line saying so.
 */
import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../src/client';
import { projectRoot } from '../devenv/project-root';
import { commitUpdate } from '../src/contract/definitions';
import type { ExtractionRequest } from '../src/contract/extraction-input';
import { BENCH_COLUMNS } from './bench-table';
import { tableSetNames } from './table-set';

const run = promisify(execFile);

/** The many-table schema's name. */
export const SET_SCHEMA = 'bench_set';
/** The PG → PG baselines: pgcopydb on the single table, and (with the set's label) on the many-table schema. */
export const PGCOPYDB = 'pgcopydb copy table-data ×2 (PG → PG)';
export const pgcopydbSetLabel = (setLabel: string): string => `${PGCOPYDB}, ${setLabel}`;

export interface Method {
  name: string;
  kind: 'baseline' | 'ours';
  /** Runs before each run, outside its time and CPU (a fresh target database). */
  prepare?(): Promise<void>;
  /** Runs once: the clock stops when it resolves. */
  once(): Promise<RunOutput>;
}

/** What one run left to measure. Sizing a folder or reading a history is not the method's work: both are read after the clock stops. */
export interface RunOutput {
  bytes(): Promise<number>;
  /** Ours: the worker's peak RSS in this run. */
  peakRssMb?: number;
  /** Ours: how long it planned, from the run's history. */
  planning?(): Promise<Planning>;
}

/** A run that wrote no files (server COPY to /dev/null, a PG → PG copy). */
export const NO_FILES: RunOutput = { bytes: async () => 0 };

async function dirBytes(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-sb', dir]);
  return Number(stdout.split('\t')[0]);
}

/** Planning seconds of a finished run, from its history. */
export interface Planning {
  /** Workflow start to the first copy activity scheduled (the holder has exported the snapshot, sized the table and planned its ranges by then). */
  toFirstCopy: number;
  /** The holder's own part: its plan activity (`awaitSnapshotPlan`, `awaitSnapshotSetPlan`) from start to completion. */
  inHolder: number;
}

async function planningOf(handle: WorkflowHandle): Promise<Planning> {
  const events = (await handle.fetchHistory()).events ?? [];
  const at = (e: (typeof events)[number] | undefined) => (e ? Number(e.eventTime?.seconds ?? 0) + (e.eventTime?.nanos ?? 0) / 1e9 : Number.NaN);
  const firstCopy = events.find((e) => /^copy/.test(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''));
  const plan = events.find((e) => /^awaitSnapshot/.test(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''));
  const planEvent = (kind: 'activityTaskStartedEventAttributes' | 'activityTaskCompletedEventAttributes') =>
    events.find((e) => plan && String(e[kind]?.scheduledEventId) === String(plan.eventId));
  return {
    toFirstCopy: at(firstCopy) - at(events[0]),
    inHolder: at(planEvent('activityTaskCompletedEventAttributes')) - at(planEvent('activityTaskStartedEventAttributes')),
  };
}

/** A process's peak RSS (VmHWM) from /proc, since start or since {@link resetPeakRss}. */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** Starts a new peak-RSS window (Linux: writing 5 to clear_refs resets VmHWM), so each run reports its own peak. */
function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** The task queue of the bench's worker: every method of ours starts its workflow on it. */
export const TASK_QUEUE = 'bench';

/** The PG → PG methods' target database, on the source's cluster (the worker's target `bench`). */
export const benchTargetUrl = (pgUrl: string): string => pgUrl.replace(/\/[^/]*$/, '/bench_target');

/** What the methods run against, and the folders they write. */
export interface BenchContext {
  pgUrl: string;
  /** The Temporal client every method of ours starts its workflow with. */
  client: Client;
  worker: ChildProcess;
  scratch: string;
  /** Rows of the bench table (and of the many-table schema in all). */
  rows: number;
  /** Tables in the many-table schema, and the label its methods carry (`200-table schema`). */
  setTables: number;
  setLabel: string;
  /** Folders baselines wrote in the current run, removed once it is measured (see the run loop). */
  written: Set<string>;
}

type Selection = Pick<ExtractionRequest, 'table' | 'schema'>;

/** One of ours: a workflow run on the bench's worker, committed by us (or by its built-in loader) and waited for to its end. */
export function ours(ctx: BenchContext, label: string, request: Omit<ExtractionRequest, keyof Selection>, selection: Selection = { table: 'bench.t' }): Method {
  return {
    name: `pg-extract ${label}`,
    kind: 'ours',
    async once() {
      resetPeakRss(ctx.worker.pid!);
      const handle = await startExtraction(ctx.client, { ...selection, commitDeadlineMs: 3_600_000, ...request }, { taskQueue: TASK_QUEUE });
      const manifest = await waitForManifest(handle);
      // With a target the built-in loader is the target owner; otherwise we answer for one.
      if (!request.target) await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      return { bytes: async () => manifest.totals.bytes, peakRssMb: peakRssMb(ctx.worker.pid!), planning: () => planningOf(handle) };
    },
  };
}

/** Every method of the bench, in the order each run goes through them; `pgcopydb` says whether its baselines are among them. */
export async function benchMethods(ctx: BenchContext): Promise<{ methods: Method[]; pgcopydb: boolean }> {
  const pg = { url: ctx.pgUrl };
  const targetUrl = benchTargetUrl(pg.url);
  const { scratch, written } = ctx;
  const psql = (sql: string) => run('psql', [pg.url, '-v', 'ON_ERROR_STOP=1', '-q', '-c', sql], { maxBuffer: 1 << 20 });
  const out = (name: string): string => {
    const dir = join(scratch, name);
    mkdirSync(dir, { recursive: true });
    written.add(dir);
    return dir;
  };

  /** The `i`-th of `ways` key ranges of the bench table, as a shell script would split it. */
  const keyRange = (i: number, ways: number): string => {
    const step = Math.ceil(ctx.rows / ways);
    return `id > ${i * step} AND id <= ${(i + 1) * step}`;
  };

  /**
   * A shell script's parallel export: `ways` psql sessions over key ranges. `receipted` adds what
   * ours does beyond it, per file: a sha256 (`sha256sum`) and an fsync (`sync FILE`).
   */
  const handSplit = (ways: number, receipted = false): Method => ({
    name: receipted ? `psql \\copy ×${ways} + sha256sum + sync` : `psql \\copy ×${ways} (hand-split)`,
    kind: 'baseline',
    async once() {
      const dir = out(`split${ways}${receipted ? '-receipted' : ''}`);
      await Promise.all(
        Array.from({ length: ways }, async (_, i) => {
          const file = `${dir}/part-${i}.csv`;
          await psql(`\\copy (SELECT * FROM bench.t WHERE ${keyRange(i, ways)}) TO '${file}' (FORMAT csv, HEADER)`);
          if (receipted) {
            await run('sha256sum', [file]);
            await run('sync', [file]);
          }
        }),
      );
      return { bytes: () => dirBytes(dir) };
    },
  });

  /** `pg_dump -Fd -jN -a` of `what` (`-t table` or `-n schema`), uncompressed like our files. */
  const pgDump = (name: string, jobs: number, what: string[]): Method => ({
    name,
    kind: 'baseline',
    async once() {
      const dir = join(out(`dump-${jobs}`), 'd');
      await run('pg_dump', ['-d', pg.url, '-Fd', `-j${jobs}`, '-a', ...what, '-Z0', '-f', dir]);
      return { bytes: () => dirBytes(dir) };
    },
  });

  const methods: Method[] = [
    {
      name: "server COPY TO '/dev/null'",
      kind: 'baseline',
      once: async () => (await psql(`COPY (SELECT * FROM bench.t) TO '/dev/null' (FORMAT csv)`), NO_FILES),
    },
    // What the server alone spends formatting the rows on two sessions: the floor under any two-session client, per format.
    ...(['csv', 'binary'] as const).map((format): Method => ({
      name: `server COPY ${format} TO '/dev/null' ×2 (hand-split)`,
      kind: 'baseline',
      async once() {
        await Promise.all([0, 1].map((i) => psql(`COPY (SELECT * FROM bench.t WHERE ${keyRange(i, 2)}) TO '/dev/null' (FORMAT ${format})`)));
        return NO_FILES;
      },
    })),
    {
      name: 'psql \\copy (one session)',
      kind: 'baseline',
      async once() {
        const dir = out('psql1');
        await psql(`\\copy (SELECT * FROM bench.t) TO '${dir}/all.csv' (FORMAT csv, HEADER)`);
        return { bytes: () => dirBytes(dir) };
      },
    },
    handSplit(2),
    handSplit(2, true),
    handSplit(4),
    pgDump('pg_dump -Fd -j2 -a', 2, ['-t', 'bench.t']),
    ours(ctx, '1 partition csv', { partitions: 1 }),
    ours(ctx, '2 partitions csv', { partitions: 2 }),
    ours(ctx, '4 partitions csv', { partitions: 4 }),
    ours(ctx, '2 partitions binary', { partitions: 2, format: 'binary' }),
    ours(ctx, '4 partitions binary', { partitions: 4, format: 'binary' }),
    ours(ctx, '2 partitions csv → S3 (local SeaweedFS)', { partitions: 2, outDir: 's3://bench/runs' }),
    ours(ctx, '2 partitions csv+gzip', { partitions: 2, gzip: true }),
    ours(ctx, '4 partitions binary+gzip', { partitions: 4, format: 'binary', gzip: true }),
    ours(ctx, '2 partitions csv+zstd', { partitions: 2, compression: 'zstd' }),
    ours(ctx, '2 partitions binary+zstd', { partitions: 2, format: 'binary', compression: 'zstd' }),
    ours(ctx, '2 partitions parquet', { partitions: 2, format: 'parquet' }),
    // The many-table schema: each tool at its defaults (ours: `--partitions auto`, 8 in flight), and ours at pg_dump's 2 sessions.
    pgDump(`pg_dump -Fd -j2 -a, ${ctx.setLabel}`, 2, ['-n', SET_SCHEMA]),
    pgDump(`pg_dump -Fd -j4 -a, ${ctx.setLabel}`, 4, ['-n', SET_SCHEMA]),
    ours(ctx, `--schema csv, ${ctx.setLabel}`, {}, { schema: SET_SCHEMA }),
    ours(ctx, `--schema csv, 2 in flight, ${ctx.setLabel}`, { maxInFlight: 2 }, { schema: SET_SCHEMA }),
    ours(ctx, `--schema binary, ${ctx.setLabel}`, { format: 'binary' }, { schema: SET_SCHEMA }),
    // Parquet on 8 lanes: the worker's memory with that many conversions at once.
    ours(ctx, `--schema parquet, ${ctx.setLabel}`, { format: 'parquet' }, { schema: SET_SCHEMA }),
  ];
  /** Fresh target tables: a new target database with `schema` and its `tables` of the bench's shape (run outside the method's time and CPU). */
  const freshTarget = (schema: string, tables: string[]) => async (): Promise<void> => {
    await psql('DROP DATABASE IF EXISTS bench_target WITH (FORCE)');
    await psql('CREATE DATABASE bench_target');
    const ddl = [`CREATE SCHEMA ${schema}`, ...tables.map((name) => `CREATE TABLE ${name} ${BENCH_COLUMNS}`)].join('; ');
    await run('psql', [targetUrl, '-q', '-v', 'ON_ERROR_STOP=1', '-c', ddl]);
  };
  const setTables = tableSetNames(SET_SCHEMA, ctx.setTables);
  const freshTable = freshTarget('bench', ['bench.t']);
  const freshSet = freshTarget(SET_SCHEMA, setTables);
  // The PG → PG path through our built-in loader, against a fresh target each run: csv (the
  // default, which tolerates differing column types) and binary (same types; cheaper to parse).
  for (const format of ['csv', 'binary'] as const) {
    const loaderRun = ours(ctx, `2 partitions ${format} → PG (built-in loader)`, {
      partitions: 2,
      format,
      target: { name: 'bench', table: 'bench.t', mode: 'append' },
    });
    methods.push({ ...loaderRun, prepare: freshTable });
    // The same PG → PG load with no files: each partition's COPY TO piped into a COPY FROM.
    const streamRun = ours(ctx, `2 partitions ${format} → PG (--via stream)`, {
      partitions: 2,
      format,
      target: { name: 'bench', table: 'bench.t', mode: 'append', via: 'stream' },
    });
    methods.push({ ...streamRun, prepare: freshTable });
  }
  // The many-table schema PG → PG (issue #18): every table loaded in one target transaction.
  for (const format of ['csv', 'binary'] as const) {
    const setLoad = ours(
      ctx,
      `--schema ${format} → PG (built-in loader), ${ctx.setLabel}`,
      { format, target: { name: 'bench', schema: SET_SCHEMA, mode: 'append' } },
      { schema: SET_SCHEMA },
    );
    methods.push({ ...setLoad, prepare: freshSet });
  }
  const pgcopydb = await run('pgcopydb', ['--version']).then(
    () => true,
    () => false,
  );
  /**
   * `pgcopydb copy table-data` on two sessions of `tables` (pgcopydb 0.10 has no include-only-schema
   * section), tables over 1 MB split in parts, into the fresh target `freshTables` makes. Its filter
   * file is written with the target, outside the run's time.
   */
  const filterFile = join(scratch, 'pgcopydb-filters.ini');
  const pgcopydbTableData = (name: string, tables: string[], freshTables: () => Promise<void>): Method => ({
    name,
    kind: 'baseline',
    async prepare() {
      writeFileSync(filterFile, `[include-only-table]\n${tables.join('\n')}\n`);
      await freshTables();
    },
    async once() {
      const dir = out('pgcopydb');
      await run(
        'pgcopydb',
        [
          'copy',
          'table-data',
          '--source',
          pg.url,
          '--target',
          targetUrl,
          '--table-jobs',
          '2',
          '--split-tables-larger-than',
          '1MB',
          '--dir',
          join(dir, 'work'),
          '--filters',
          filterFile,
          '--not-consistent',
        ],
        { maxBuffer: 64 << 20 },
      );
      return NO_FILES;
    },
  });
  if (pgcopydb) {
    methods.push(pgcopydbTableData(PGCOPYDB, ['bench.t'], freshTable));
    methods.push(pgcopydbTableData(pgcopydbSetLabel(ctx.setLabel), setTables, freshSet));
  } else {
    console.error('pgcopydb is not installed (Debian: apt-get install pgcopydb): its PG → PG baselines are skipped');
  }

  // DuckDB's own PostgreSQL scanner writing the same table to Parquet on as many threads as our partitions (bench/duckdb-postgres-scanner.py).
  const python = join(projectRoot(), '.venv', 'bin', 'python');
  const duckdbScanner = await run(python, ['-c', 'import duckdb, duckdb_extension_postgres_scanner']).then(
    () => true,
    () => false,
  );
  if (duckdbScanner) {
    methods.push({
      name: 'DuckDB postgres scanner → parquet, 2 threads',
      kind: 'baseline',
      async once() {
        const dir = out('duckdb-scanner');
        await run(python, [join(projectRoot(), 'bench', 'duckdb-postgres-scanner.py'), pg.url, 'bench.t', join(dir, 't.parquet'), '2']);
        return { bytes: () => dirBytes(dir) };
      },
    });
  } else {
    console.error(
      "DuckDB's postgres scanner is not installed (.venv/bin/pip install duckdb==1.5.5 duckdb-extension-postgres-scanner==1.5.5): its Parquet baseline is skipped",
    );
  }
  return { methods, pgcopydb };
}

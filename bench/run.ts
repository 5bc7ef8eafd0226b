/**
 * `npm run bench`: extraction speed and memory, side by side, in one invocation. Baselines
 * (server COPY to /dev/null, psql \copy, hand-split parallel psql, pg_dump -j2, pgcopydb, DuckDB's PostgreSQL scanner to Parquet) and our
 * full Temporal workflow run interleaved, each at least `--runs` times; the table reports medians
 * and ratios to the best baseline. Results go to bench/results/latest.json.
 *
 *   npm run bench -- [--rows 5000000] [--runs 3] [--quick] [--scaling] [--tables 200] [--only REGEXP] (./options.ts)
 *
 * Rows named `… 200-table schema …` time a whole schema (bench/table-set.ts: `--tables` tables, the
 * same `--rows` in all) through `--schema` against `pg_dump -Fd -j2 -a -n`, and loaded PG → PG
 * against `pgcopydb copy table-data`; the schema is seeded only when one of them is selected.
 * `--scaling` also times the 2-partition workflow on 1 M and 10 M rows and reports the ratio and
 * each size's peak RSS. The worker runs as users are told to run it (src/worker/runtime.ts, and it
 * bundles its workflows at start, as `npm run worker` does), and its peak RSS is reset before each
 * run, so every figure is that run's own peak.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { Client as PgClient } from 'pg';
import { startExtraction, waitForManifest } from '../src/client';
import { projectRoot } from '../devenv/project-root';
import { startPostgres } from '../devenv/postgres-service';
import { startS3 } from '../devenv/s3-service';
import { stopChild } from '../devenv/stop-child';
import { startDevServer } from '../devenv/temporal-dev-server';
import { commitUpdate } from '../src/contract/definitions';
import type { ExtractionRequest } from '../src/contract/extraction-input';
import { workerProcessEnv } from '../src/worker/runtime';
import { BENCH_COLUMNS, createBenchTable } from './bench-table';
import { BENCH_USAGE, type BenchOptions, BenchUsageError, benchOptions } from './options';
import { seedTableSet, tableSetNames, tableSetRows } from './table-set';
import { readProcStat, reapedChildrenCpuSeconds, treeCpuSeconds } from './cpu-time';
import { type Measured, type Scaling, median, printReport, summarize } from './report';

const run = promisify(execFile);

const OPTIONS = parsedOptions();
const ROWS = OPTIONS.rows;
/** `--only REGEXP`: run just the methods whose names match (goals need both of their methods). */
const ONLY = OPTIONS.only;
const RUNS = OPTIONS.runs;
/** The many-table schema: its table count and the label its rows carry (select them with `--only '200-table'`). */
const SET_TABLES = OPTIONS.tables;
const SET_LABEL = `${SET_TABLES}-table schema`;
const SET_SCHEMA = 'bench_set';
/** The PG → PG baselines: pgcopydb on the single table and on the many-table schema. */
const PGCOPYDB = 'pgcopydb copy table-data ×2 (PG → PG)';
const PGCOPYDB_SET = `${PGCOPYDB}, ${SET_LABEL}`;

interface Method {
  name: string;
  kind: 'baseline' | 'ours';
  /** Runs before each run, outside its time and CPU (a fresh target database). */
  prepare?(): Promise<void>;
  /** Runs once: the clock stops when it resolves. */
  once(): Promise<RunOutput>;
}

/** What one run left to measure. Sizing a folder or reading a history is not the method's work: both are read after the clock stops. */
interface RunOutput {
  bytes(): Promise<number>;
  /** Ours: the worker's peak RSS in this run. */
  peakRssMb?: number;
  /** Ours: how long it planned, from the run's history. */
  planning?(): Promise<Planning>;
}

/** A run that wrote no files (server COPY to /dev/null, a PG → PG copy). */
const NO_FILES: RunOutput = { bytes: async () => 0 };

async function seed(url: string, schema: string, rows: number): Promise<void> {
  const pg = new PgClient({ connectionString: url });
  await pg.connect();
  try {
    const have = await pg.query(`SELECT count(*)::int AS n FROM ${schema}.t`).catch(() => null);
    if (have?.rows[0].n === rows) return;
    await pg.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    await createBenchTable(pg, `${schema}.t`, rows);
  } finally {
    await pg.end();
  }
}

async function dirBytes(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-sb', dir]);
  return Number(stdout.split('\t')[0]);
}

/** Planning seconds of a finished run, from its history. */
interface Planning {
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
const TASK_QUEUE = 'bench';

/** The PG → PG methods' target database, on the source's cluster (the worker's target `bench`). */
const benchTargetUrl = (pgUrl: string): string => pgUrl.replace(/\/[^/]*$/, '/bench_target');

/** Starts the worker every method of ours runs on, as users run it; resolves once it polls. */
async function startWorker(pgUrl: string, temporalAddress: string, s3Env: Record<string, string>, scratch: string): Promise<ChildProcess> {
  const worker = spawn(process.execPath, [join(projectRoot(), 'dist', 'src', 'worker', 'worker.js')], {
    env: workerProcessEnv({
      ...process.env,
      ...s3Env,
      TEMPORAL_ADDRESS: temporalAddress,
      PG_EXTRACT_TASK_QUEUE: TASK_QUEUE,
      PG_EXTRACT_OUT_DIR: join(scratch, 'out'),
      PG_EXTRACT_SOURCE_URL: pgUrl,
      PG_EXTRACT_TARGET_BENCH_URL: benchTargetUrl(pgUrl),
      PG_EXTRACT_WORKFLOW_BUNDLE: '',
    }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      worker.stderr!.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString()).slice(-4000);
        if (stderr.includes('pg-extract worker on')) resolve();
      });
      worker.once('exit', (code, signal) => reject(new Error(`the worker exited (${signal ?? code}) before it was ready:\n${stderr}`)));
      timer = setTimeout(() => reject(new Error(`the worker was not ready within 120 s:\n${stderr}`)), 120_000);
    });
  } catch (err) {
    await stopChild(worker, 'SIGTERM', 10_000);
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return worker;
}

async function main(): Promise<void> {
  const scratch = join(tmpdir(), `pg-extract-bench-${process.pid}`);
  mkdirSync(scratch, { recursive: true });
  const pg = await startPostgres({ settings: { shared_buffers: '1GB', max_wal_size: '4GB' } });
  const temporal = await startDevServer({ freePorts: true, logFile: join(scratch, 'temporal.log') });
  const s3 = await startS3();
  let worker: ChildProcess | undefined;
  try {
    await s3.createBucket('bench');
    worker = await startWorker(pg.url, temporal.address, s3.env, scratch);
    await measure(pg.url, { address: temporal.address, pid: temporal.process?.pid ?? null }, worker, scratch);
  } finally {
    // However the bench ended: a failed one used to leave its worker running.
    if (worker) await stopChild(worker, 'SIGTERM', 10_000);
    await s3.stop();
    await temporal.stop();
    await pg.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The postmaster's pid: the parent of any backend. */
async function postmasterPid(url: string): Promise<number> {
  const pg = new PgClient({ connectionString: url });
  await pg.connect();
  try {
    const backend = Number((await pg.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    return readProcStat(backend)!.ppid;
  } finally {
    await pg.end();
  }
}

async function measure(pgUrl: string, temporal: { address: string; pid: number | null }, worker: ChildProcess, scratch: string): Promise<void> {
  const pg = { url: pgUrl };
  const targetUrl = benchTargetUrl(pg.url);
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
  const psql = (sql: string) => run('psql', [pg.url, '-v', 'ON_ERROR_STOP=1', '-q', '-c', sql], { maxBuffer: 1 << 20 });
  /** Folders baselines wrote in the current run, removed once it is measured (see the run loop). */
  const written = new Set<string>();
  const out = (name: string): string => {
    const dir = join(scratch, name);
    mkdirSync(dir, { recursive: true });
    written.add(dir);
    return dir;
  };

  /** The `i`-th of `ways` key ranges of the bench table, as a shell script would split it. */
  const keyRange = (i: number, ways: number): string => {
    const step = Math.ceil(ROWS / ways);
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

  type Selection = Pick<ExtractionRequest, 'table' | 'schema'>;
  const ours = (label: string, request: Omit<ExtractionRequest, keyof Selection>, selection: Selection = { table: 'bench.t' }): Method => ({
    name: `pg-extract ${label}`,
    kind: 'ours',
    async once() {
      resetPeakRss(worker.pid!);
      const handle = await startExtraction(client, { ...selection, commitDeadlineMs: 3_600_000, ...request }, { taskQueue: TASK_QUEUE });
      const manifest = await waitForManifest(handle);
      // With a target the built-in loader is the target owner; otherwise we answer for one.
      if (!request.target) await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      return { bytes: async () => manifest.totals.bytes, peakRssMb: peakRssMb(worker.pid!), planning: () => planningOf(handle) };
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
    ours('1 partition csv', { partitions: 1 }),
    ours('2 partitions csv', { partitions: 2 }),
    ours('4 partitions csv', { partitions: 4 }),
    ours('2 partitions binary', { partitions: 2, format: 'binary' }),
    ours('4 partitions binary', { partitions: 4, format: 'binary' }),
    ours('2 partitions csv → S3 (local SeaweedFS)', { partitions: 2, outDir: 's3://bench/runs' }),
    ours('2 partitions csv+gzip', { partitions: 2, gzip: true }),
    ours('4 partitions binary+gzip', { partitions: 4, format: 'binary', gzip: true }),
    ours('2 partitions csv+zstd', { partitions: 2, compression: 'zstd' }),
    ours('2 partitions binary+zstd', { partitions: 2, format: 'binary', compression: 'zstd' }),
    ours('2 partitions parquet', { partitions: 2, format: 'parquet' }),
    // The many-table schema: each tool at its defaults (ours: `--partitions auto`, 8 in flight), and ours at pg_dump's 2 sessions.
    pgDump(`pg_dump -Fd -j2 -a, ${SET_LABEL}`, 2, ['-n', SET_SCHEMA]),
    pgDump(`pg_dump -Fd -j4 -a, ${SET_LABEL}`, 4, ['-n', SET_SCHEMA]),
    ours(`--schema csv, ${SET_LABEL}`, {}, { schema: SET_SCHEMA }),
    ours(`--schema csv, 2 in flight, ${SET_LABEL}`, { maxInFlight: 2 }, { schema: SET_SCHEMA }),
    ours(`--schema binary, ${SET_LABEL}`, { format: 'binary' }, { schema: SET_SCHEMA }),
    // Parquet on 8 lanes: the worker's memory with that many conversions at once.
    ours(`--schema parquet, ${SET_LABEL}`, { format: 'parquet' }, { schema: SET_SCHEMA }),
  ];
  /** Fresh target tables: a new target database with `schema` and its `tables` of the bench's shape (run outside the method's time and CPU). */
  const freshTarget = (schema: string, tables: string[]) => async (): Promise<void> => {
    await psql('DROP DATABASE IF EXISTS bench_target WITH (FORCE)');
    await psql('CREATE DATABASE bench_target');
    const ddl = [`CREATE SCHEMA ${schema}`, ...tables.map((name) => `CREATE TABLE ${name} ${BENCH_COLUMNS}`)].join('; ');
    await run('psql', [targetUrl, '-q', '-v', 'ON_ERROR_STOP=1', '-c', ddl]);
  };
  const setTables = tableSetNames(SET_SCHEMA, SET_TABLES);
  const freshTable = freshTarget('bench', ['bench.t']);
  const freshSet = freshTarget(SET_SCHEMA, setTables);
  // The PG → PG path through our built-in loader, against a fresh target each run: csv (the
  // default, which tolerates differing column types) and binary (same types; cheaper to parse).
  for (const format of ['csv', 'binary'] as const) {
    const loaderRun = ours(`2 partitions ${format} → PG (built-in loader)`, {
      partitions: 2,
      format,
      target: { name: 'bench', table: 'bench.t', mode: 'append' },
    });
    methods.push({ ...loaderRun, prepare: freshTable });
    // The same PG → PG load with no files: each partition's COPY TO piped into a COPY FROM.
    const streamRun = ours(`2 partitions ${format} → PG (--via stream)`, {
      partitions: 2,
      format,
      target: { name: 'bench', table: 'bench.t', mode: 'append', via: 'stream' },
    });
    methods.push({ ...streamRun, prepare: freshTable });
  }
  // The many-table schema PG → PG (issue #18): every table loaded in one target transaction.
  for (const format of ['csv', 'binary'] as const) {
    const setLoad = ours(
      `--schema ${format} → PG (built-in loader), ${SET_LABEL}`,
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
    methods.push(pgcopydbTableData(PGCOPYDB_SET, setTables, freshSet));
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

  if (ONLY) {
    const names = methods.map((m) => m.name);
    methods.splice(0, methods.length, ...methods.filter((m) => ONLY.test(m.name)));
    if (methods.length === 0 && !OPTIONS.scaling) throw new BenchUsageError(`--only ${ONLY.source} matches none of the methods:\n  ${names.join('\n  ')}`);
  }
  // Seeded once the methods are known: an --only that matches none stops the bench before minutes of seeding.
  console.error(`seeding ${ROWS} rows…`);
  await seed(pg.url, 'bench', ROWS);
  await seed(pg.url, 'bench_empty', 0);
  if (methods.some((m) => m.name.includes(SET_LABEL))) {
    console.error(`seeding ${SET_LABEL} (${ROWS} rows)…`);
    await seedTableSet(pg.url, SET_SCHEMA, tableSetRows(SET_TABLES, ROWS));
  }
  const postmaster = await postmasterPid(pg.url);
  /** CPU seconds so far of the server, the client side of method `m`, and Temporal. */
  const cpuNow = (m: Method) => ({
    server: treeCpuSeconds(postmaster),
    client: m.kind === 'ours' ? treeCpuSeconds(worker.pid!) : reapedChildrenCpuSeconds(),
    temporal: temporal.pid === null ? 0 : treeCpuSeconds(temporal.pid),
  });
  const times = new Map<string, Omit<Measured, 'name' | 'kind'>>();
  for (let r = 0; r < RUNS; r++) {
    for (const m of methods) {
      await m.prepare?.();
      const cpu0 = cpuNow(m);
      const t0 = process.hrtime.bigint();
      const output = await m.once();
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpu1 = cpuNow(m);
      // Every run of a method writes the same bytes: the first run's are sized.
      const entry = times.get(m.name) ?? { seconds: [], bytes: await output.bytes(), rss: [], cpu: { server: [], client: [], temporal: [] } };
      for (const dir of written) rmSync(dir, { recursive: true, force: true });
      written.clear();
      entry.seconds.push(seconds);
      for (const k of ['server', 'client', 'temporal'] as const) entry.cpu[k].push(cpu1[k] - cpu0[k]);
      if (output.peakRssMb !== undefined) entry.rss.push(output.peakRssMb);
      times.set(m.name, entry);
      console.error(`run ${r + 1}/${RUNS}  ${m.name.padEnd(40)} ${seconds.toFixed(2)} s`);
    }
  }

  /** Runs one of ours RUNS times in a row: its median seconds and the largest peak RSS of its runs. */
  const repeated = async (method: Method): Promise<{ seconds: number; peakRssMb: number; planning: Planning }> => {
    const xs: number[] = [];
    const plans: Planning[] = [];
    let peak = 0;
    for (let r = 0; r < RUNS; r++) {
      const t0 = process.hrtime.bigint();
      const { peakRssMb: rss, planning } = await method.once();
      xs.push(Number(process.hrtime.bigint() - t0) / 1e9);
      plans.push((await planning?.()) ?? { toFirstCopy: Number.NaN, inHolder: Number.NaN });
      peak = Math.max(peak, rss ?? 0);
    }
    const planning = { toFirstCopy: median(plans.map((p) => p.toFirstCopy)), inHolder: median(plans.map((p) => p.inHolder)) };
    return { seconds: median(xs), peakRssMb: Math.round(peak), planning };
  };

  // Fixed cost of a run and of each partition: an empty table with 2 and with 16 partitions.
  const empty2 = (await repeated(ours('empty', { partitions: 2 }, { table: 'bench_empty.t' }))).seconds;
  const empty16 = (await repeated(ours('empty', { partitions: 16 }, { table: 'bench_empty.t' }))).seconds;

  // 10× the rows should take about 10× the time, in the same memory: 2 partitions on 1 M and on 10 M rows.
  let scaling: Scaling | null = null;
  if (OPTIONS.scaling) {
    const sized = async (rows: number) => {
      const schema = `bench_${rows / 1_000_000}m`;
      await seed(pg.url, schema, rows);
      const timed = await repeated(ours('scaling', { partitions: 2 }, { table: `${schema}.t` }));
      // Planning as the default sizes the plan (`partitions: auto`: an estimate, never a COUNT(*)).
      return { ...timed, planning: (await repeated(ours('scaling', { partitions: 'auto' }, { table: `${schema}.t` }))).planning };
    };
    const [one, ten] = [await sized(1_000_000), await sized(10_000_000)];
    scaling = {
      rows1M: one.seconds,
      rows10M: ten.seconds,
      ratio: Number((ten.seconds / one.seconds).toFixed(2)),
      peakRssMb1M: one.peakRssMb,
      peakRssMb10M: ten.peakRssMb,
      planning1M: Number(one.planning.toFirstCopy.toFixed(3)),
      planning10M: Number(ten.planning.toFirstCopy.toFixed(3)),
      holderPlanning1M: Number(one.planning.inHolder.toFixed(3)),
      holderPlanning10M: Number(ten.planning.inHolder.toFixed(3)),
    };
  }

  const summary = summarize({
    rows: ROWS,
    runs: RUNS,
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
    tables: SET_TABLES,
    setLabel: SET_LABEL,
    pgcopydb: pgcopydb ? { table: PGCOPYDB, set: PGCOPYDB_SET } : null,
    measured: methods.map((m) => ({ name: m.name, kind: m.kind, ...times.get(m.name)! })),
    empty2,
    empty16,
    scaling,
  });
  printReport(summary, SET_LABEL);
  // A partial run (--only) must not replace the results of a whole one.
  const resultsDir = join(projectRoot(), 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(join(resultsDir, ONLY ? 'latest-only.json' : 'latest.json'), `${JSON.stringify(summary, null, 2)}\n`);

  await client.connection.close();
}

/** The command line, or the usage and an exit: 0 for `--help`, 2 for a command line the bench cannot run. */
function parsedOptions(): BenchOptions {
  try {
    const options = benchOptions(process.argv.slice(2));
    if (!options.help) return options;
    console.log(BENCH_USAGE);
    process.exit(0);
  } catch (err) {
    if (!(err instanceof BenchUsageError)) throw err;
    console.error(err.message);
    process.exit(2);
  }
}

main().catch((err) => {
  console.error(err instanceof BenchUsageError ? err.message : err);
  process.exit(err instanceof BenchUsageError ? 2 : 1);
});

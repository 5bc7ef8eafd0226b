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
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Client as PgClient } from 'pg';
import { projectRoot } from '../devenv/project-root';
import { startPostgres } from '../devenv/postgres-service';
import { startS3 } from '../devenv/s3-service';
import { stopChild } from '../devenv/stop-child';
import { startDevServer } from '../devenv/temporal-dev-server';
import { workerProcessEnv } from '../src/worker/runtime';
import { createBenchTable } from './bench-table';
import {
  type BenchContext,
  type Method,
  PGCOPYDB,
  type Planning,
  SET_SCHEMA,
  TASK_QUEUE,
  benchMethods,
  benchTargetUrl,
  ours,
  pgcopydbSetLabel,
} from './methods';
import { BENCH_USAGE, type BenchOptions, BenchUsageError, benchOptions } from './options';
import { seedTableSet, tableSetRows } from './table-set';
import { readProcStat, reapedChildrenCpuSeconds, treeCpuSeconds } from './cpu-time';
import { type Measured, type Scaling, median, printReport, summarize } from './report';

const OPTIONS = parsedOptions();
const ROWS = OPTIONS.rows;
/** `--only REGEXP`: run just the methods whose names match (goals need both of their methods). */
const ONLY = OPTIONS.only;
const RUNS = OPTIONS.runs;
/** The many-table schema: its table count and the label its rows carry (select them with `--only '200-table'`). */
const SET_TABLES = OPTIONS.tables;
const SET_LABEL = `${SET_TABLES}-table schema`;

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
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
  const ctx: BenchContext = { pgUrl, client, worker, scratch, rows: ROWS, setTables: SET_TABLES, setLabel: SET_LABEL, written: new Set() };
  const { methods, pgcopydb } = await benchMethods(ctx);
  if (ONLY) {
    const names = methods.map((m) => m.name);
    methods.splice(0, methods.length, ...methods.filter((m) => ONLY.test(m.name)));
    if (methods.length === 0 && !OPTIONS.scaling) throw new BenchUsageError(`--only ${ONLY.source} matches none of the methods:\n  ${names.join('\n  ')}`);
  }
  // Seeded once the methods are known: an --only that matches none stops the bench before minutes of seeding.
  console.error(`seeding ${ROWS} rows…`);
  await seed(pgUrl, 'bench', ROWS);
  await seed(pgUrl, 'bench_empty', 0);
  if (methods.some((m) => m.name.includes(SET_LABEL))) {
    console.error(`seeding ${SET_LABEL} (${ROWS} rows)…`);
    await seedTableSet(pgUrl, SET_SCHEMA, tableSetRows(SET_TABLES, ROWS));
  }
  const postmaster = await postmasterPid(pgUrl);
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
      for (const dir of ctx.written) rmSync(dir, { recursive: true, force: true });
      ctx.written.clear();
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
  const empty2 = (await repeated(ours(ctx, 'empty', { partitions: 2 }, { table: 'bench_empty.t' }))).seconds;
  const empty16 = (await repeated(ours(ctx, 'empty', { partitions: 16 }, { table: 'bench_empty.t' }))).seconds;

  // 10× the rows should take about 10× the time, in the same memory: 2 partitions on 1 M and on 10 M rows.
  let scaling: Scaling | null = null;
  if (OPTIONS.scaling) {
    const sized = async (rows: number) => {
      const schema = `bench_${rows / 1_000_000}m`;
      await seed(pgUrl, schema, rows);
      const timed = await repeated(ours(ctx, 'scaling', { partitions: 2 }, { table: `${schema}.t` }));
      // Planning as the default sizes the plan (`partitions: auto`: an estimate, never a COUNT(*)).
      return { ...timed, planning: (await repeated(ours(ctx, 'scaling', { partitions: 'auto' }, { table: `${schema}.t` }))).planning };
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
    pgcopydb: pgcopydb ? { table: PGCOPYDB, set: pgcopydbSetLabel(SET_LABEL) } : null,
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

/**
 * Process settings a worker should start with. The memory settings are read only at process start,
 * so they travel as environment to whatever launches the worker (`npm run worker`, the Dockerfile,
 * the bench, the tests' worker processes); libuv's pool size is read when the pool first runs, so
 * the worker sets it itself, first thing ({@link sizeThreadPool}).
 *
 * Measured on 2 M rows, nine 2- and 4-partition runs in a row on one worker: peak RSS 284 MB
 * without the first two, 228 MB with them, at the same speed (the V8 profile shows no more GC time).
 * Row data lives in Buffers outside the V8 heap; the settings make freed memory go back to the OS sooner.
 */

/**
 * - `--max-semi-space-size=4` (MB): V8's young generation is scavenged when it fills with small
 *   JS objects, and only a scavenge frees the Buffers those objects point to. The default (16 MB)
 *   lets tens of MB of read and block Buffers wait for it; 1 MB saved 20 MB more but tripled GC time.
 * - `MALLOC_MMAP_THRESHOLD_=131072`: glibc raises its mmap threshold to the size of the largest
 *   block freed so far, so after the first 1 MiB block every block comes from the malloc heap,
 *   which keeps the pages; a fixed threshold keeps 1 MiB blocks on mmap, returned on free.
 * - `MALLOC_ARENA_MAX=2`: glibc gives threads that allocate at once arenas of their own (up to 8 per
 *   core), and each keeps what was freed in it. libuv's pool (gzip, zstd, file I/O), Temporal's core
 *   and DuckDB allocate on their own threads, so a worker that has compressed or converted held that
 *   memory on into later runs. Every method of the bench, one after another on one worker (5 M
 *   rows): peak RSS 3–27 MB lower in 14 of 18 (csv+zstd 292 → 265 MB, Parquet 324 → 306), about
 *   the same in the rest, at the same speed.
 */
export const WORKER_V8_FLAGS = ['--max-semi-space-size=4'] as const;
export const WORKER_MALLOC_ENV = { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_ARENA_MAX: '2' } as const;

const words = (text: string | undefined): string[] => (text ?? '').split(/\s+/).filter(Boolean);

/** `env` plus the worker settings; the flags are appended to any NODE_OPTIONS already there. */
export function workerProcessEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const given = words(env.NODE_OPTIONS);
  const nodeOptions = [...given, ...WORKER_V8_FLAGS.filter((f) => !given.includes(f))].join(' ');
  return { ...WORKER_MALLOC_ENV, ...env, NODE_OPTIONS: nodeOptions };
}

/** The settings as a user would set them, e.g. for a log line telling how to start a worker. */
export function describeWorkerRuntimeSettings(): string {
  return [`NODE_OPTIONS=${WORKER_V8_FLAGS.join(' ')}`, ...Object.entries(WORKER_MALLOC_ENV).map(([k, v]) => `${k}=${v}`)].join(' ');
}

/** Whether this process started with the worker settings (the worker logs it at start). */
export function hasWorkerRuntimeSettings(execArgv: string[] = process.execArgv, env: NodeJS.ProcessEnv = process.env): boolean {
  const flags = [...execArgv, ...words(env.NODE_OPTIONS)];
  return WORKER_V8_FLAGS.every((f) => flags.includes(f)) && Object.keys(WORKER_MALLOC_ENV).every((k) => env[k] !== undefined);
}

/**
 * libuv's pool, 4 threads unless `UV_THREADPOOL_SIZE` says otherwise, runs the worker's file I/O,
 * gzip and zstd, DNS lookups, SCRAM's password hashing, and every Parquet conversion, which holds a
 * pool thread for the whole of its partition (DuckDB runs a query as one pool task). Four conversions
 * at once held the whole pool: a new session waited behind them for its host's lookup and its
 * password's hash until its connect timeout failed it. So the pool has a thread for each activity the
 * worker runs at once, and four for the rest.
 */
export function threadPoolSizeFor(maxConcurrentActivities: number): number {
  return Math.min(maxConcurrentActivities + 4, 1024);
}

/**
 * Sets `UV_THREADPOOL_SIZE` for this process unless its environment did. libuv reads it when its pool
 * first runs a task, so this must run before anything in the process does I/O. Returns the size the
 * pool gets, and whether it is smaller than the activities need (a value the environment gave).
 */
export function sizeThreadPool(maxConcurrentActivities: number, env: NodeJS.ProcessEnv = process.env): { size: number; tooSmall: boolean } {
  const wanted = threadPoolSizeFor(maxConcurrentActivities);
  const given = Number(env.UV_THREADPOOL_SIZE);
  if (env.UV_THREADPOOL_SIZE && Number.isInteger(given) && given > 0) return { size: Math.min(given, 1024), tooSmall: given < wanted };
  env.UV_THREADPOOL_SIZE = String(wanted);
  return { size: wanted, tooSmall: false };
}

/**
 * Scratch folders of Parquet conversions (and of the workflow bundle a worker makes at start),
 * under the worker's TMPDIR, named for the host and pid of the worker that made them: each user
 * removes its own on every path, but a killed worker cannot. A worker starting (before it runs
 * anything) removes its host's folders whose process is gone, and those of its own pid (a restarted
 * container's worker is often pid 1 again); folders of another host sharing the TMPDIR, or of a
 * live process, are left alone. The prefix stays `pg-extract-parquet-`, which older workers' sweeps know.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, PgExtractError } from '../errors';

const SCRATCH_PREFIX = 'pg-extract-parquet-';

/** The host part of a name: letters, digits, `.` and `-` only. */
const safeHost = (host: string): string => host.replace(/[^A-Za-z0-9.-]/g, '_');

/** `pg-extract-parquet-<host>+`: the start of a host's scratch folders' names (`+` is in no host part). */
const hostPrefix = (host: string): string => `${SCRATCH_PREFIX}${safeHost(host)}+`;

/** `pg-extract-parquet-<host>+<pid>-`: the start of this process's scratch folders' names. */
export function scratchPrefix(pid = process.pid, host = hostname()): string {
  return `${hostPrefix(host)}${pid}-`;
}

/** A new scratch folder of this process; the caller removes it. */
export function makeScratch(): Promise<string> {
  return mkdtemp(join(tmpdir(), scratchPrefix()));
}

/**
 * Refuses a scratch parent DuckDB cannot read a conversion's pipe in: its file functions read `*`,
 * `?` and `[` in a path as a pattern, and a pattern, escaped or not, matches no named pipe.
 */
export function requirePlainScratchParent(dir = tmpdir()): void {
  if (/[*?[]/.test(dir)) {
    throw new PgExtractError(
      ErrorCode.INPUT_INVALID,
      `the worker's TMPDIR ${JSON.stringify(dir)} has a *, ? or [ in it, which DuckDB reads as a pattern: Parquet conversions need a TMPDIR without them`,
      { field: 'TMPDIR' },
    );
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists under another user.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Removes this host's scratch folders in `dir` left by processes that are gone or by this pid's
 * earlier life; call it before this process converts anything. Returns the names removed; a folder
 * that cannot be removed (another user's) is left and named in `failed`.
 */
export async function sweepOrphanedScratch(dir = tmpdir(), host = hostname()): Promise<{ removed: string[]; failed: string[] }> {
  const mine = hostPrefix(host);
  const removed: string[] = [];
  const failed: string[] = [];
  for (const name of await readdir(dir)) {
    const pid = name.startsWith(mine) ? /^(\d+)-/.exec(name.slice(mine.length))?.[1] : undefined;
    if (pid === undefined || (Number(pid) !== process.pid && isAlive(Number(pid)))) continue;
    await rm(join(dir, name), { recursive: true, force: true }).then(
      () => removed.push(name),
      () => failed.push(name),
    );
  }
  return { removed, failed };
}

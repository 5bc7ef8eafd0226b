/**
 * Scratch folders of Parquet conversions, under the worker's TMPDIR and named for its pid: a
 * conversion removes its own on every path, but a killed worker cannot, so a worker starting
 * removes those whose process is gone (a live pid, ours or another worker's, is left alone).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** `pg-extract-parquet-<pid>-<random>`. */
export const SCRATCH_PREFIX = 'pg-extract-parquet-';
const SCRATCH_NAME = new RegExp(`^${SCRATCH_PREFIX}(\\d+)-`);

/** A new scratch folder of this process; the caller removes it. */
export function makeScratch(): Promise<string> {
  return mkdtemp(join(tmpdir(), `${SCRATCH_PREFIX}${process.pid}-`));
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

/** Removes the scratch folders in `dir` whose process no longer runs; returns their names. */
export async function sweepOrphanedScratch(dir = tmpdir()): Promise<string[]> {
  const orphaned = (await readdir(dir)).filter((name) => {
    const pid = SCRATCH_NAME.exec(name)?.[1];
    return pid !== undefined && !isAlive(Number(pid));
  });
  for (const name of orphaned) await rm(join(dir, name), { recursive: true, force: true });
  return orphaned;
}

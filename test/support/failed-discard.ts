/**
 * An attempt whose discard fails, as when the store cannot delete what the attempt wrote: the
 * attempt's snapshot is lost (its coordinator's backend terminated) while its run folder, or one of
 * its part files, is immutable (chattr +i, which stops root too). The discard then records EPERM:
 * it could neither rename nor remove the attempt's folder (the files in it are gone, the folder and
 * its marker stay), or could not delete that file (it stays, with the folder). Either thaws once
 * the fresh attempt has started, so a later discard can succeed. Used by the live snapshot-loss
 * tests and by the history that records a cancelled run discarding again.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, rmdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { WorkflowHandle } from '@temporalio/client';
import { statusQuery } from '../../src/contract/definitions';
import { TEMP_FILE } from '../../src/storage/local-file-sink';
import { admin } from './database';
import { eventually } from './eventually';

const chattr = (flag: '+i' | '-i', path: string) => promisify(execFile)('chattr', [flag, path]);

/** Whether `scratch`'s file system takes the immutable flag (and this process may set it). */
export async function chattrWorks(scratch: string): Promise<boolean> {
  const probe = join(scratch, `chattr-${process.pid}`);
  await mkdir(probe, { recursive: true });
  const works = await chattr('+i', probe)
    .then(() => chattr('-i', probe))
    .then(
      () => true,
      () => false,
    );
  await rmdir(probe).catch(() => undefined);
  return works;
}

/** The folder under `parent` (at most two levels down) named `name`. */
export async function findFolder(parent: string, name: string): Promise<string> {
  for (const entry of await readdir(parent, { withFileTypes: true, recursive: true })) {
    if (entry.isDirectory() && entry.name === name) return join(entry.parentPath, entry.name);
  }
  throw new Error(`no ${name} under ${parent}`);
}

/** Waits until `attempt` has copied a partition, still extracting; throws if the run went past that first. */
export async function untilPartitionDone(handle: WorkflowHandle, attempt = 1): Promise<void> {
  const partitionDone = async (): Promise<boolean> => {
    const s = await handle.query(statusQuery);
    if (s.attempt === attempt && s.partitionsDone >= 1) return true;
    if (s.attempt > attempt || (s.attempt === attempt && s.phase !== 'extracting')) throw new Error(`missed the window: ${JSON.stringify(s)}`);
    return false;
  };
  await eventually(partitionDone, `a partition of attempt ${attempt} was done`, { intervalMs: 10 });
}

export async function untilAttempt(handle: WorkflowHandle, attempt: number, timeoutMs: number): Promise<void> {
  await eventually(async () => (await handle.query(statusQuery)).attempt >= attempt, `attempt ${attempt} started`, { timeoutMs });
}

/** Ends the snapshot of every attempt running now: its coordinator's backend is terminated. */
export async function loseSnapshot(): Promise<void> {
  await admin().query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator'`);
}

/** A part file `attempt` has finished writing (its temp file renamed). */
async function finishedPart(attempt: string): Promise<string> {
  const name = (await readdir(attempt)).find((e) => e.startsWith('part-') && !TEMP_FILE.test(e));
  if (!name) throw new Error(`no finished part file in ${attempt}`);
  return join(attempt, name);
}

/**
 * Lets `handle`'s run (writing under `runParent`, its --out or sanitized workflow id in the output
 * root) copy a partition of attempt 1, then loses its snapshot with `frozen` immutable: that
 * attempt's discard fails (EPERM). Returns once attempt 2 has started, thawed.
 */
export async function failFirstDiscard(handle: WorkflowHandle, runParent: string, frozen: 'run folder' | 'part file' = 'run folder'): Promise<void> {
  await untilPartitionDone(handle);
  const attempt = await findFolder(runParent, 'attempt-1');
  // Neither rename nor rmdir can touch the attempt folder inside an immutable folder, nor unlink an immutable file, root or not.
  const path = frozen === 'run folder' ? dirname(attempt) : await finishedPart(attempt);
  await chattr('+i', path);
  try {
    await loseSnapshot();
    await untilAttempt(handle, 2, 30_000);
  } finally {
    await chattr('-i', path);
  }
}

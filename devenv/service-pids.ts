/**
 * Pidfiles of the throwaway processes a run starts (PostgreSQL, the Temporal dev server, test
 * workers), written into the folder PG_EXTRACT_SERVICE_PIDS names (`.ci/run` sets it). A run that
 * crashes leaves them running; `.ci/stop-services` then stops exactly these processes, never
 * processes matched by name, which would also end other people's.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The environment variable naming the pidfile folder; without it nothing is recorded. */
export const SERVICE_PIDS_ENV = 'PG_EXTRACT_SERVICE_PIDS';

/** When `pid` started, as `ps` prints it: with the pid it names one process, even after the pid is reused. */
export function processStart(pid: number): string {
  return execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)])
    .toString()
    .trim()
    .replace(/\s+/g, ' ');
}

/**
 * Records `pid` as `<name>-<pid>.pid` holding "<pid> <signal> <start>" (the signal that stops it
 * cleanly, and its start time). Returns the function that forgets it, to call once it is stopped.
 */
export function recordServicePid(name: string, pid: number, signal: NodeJS.Signals): () => void {
  const dir = process.env[SERVICE_PIDS_ENV];
  if (!dir) return () => undefined;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${pid}.pid`);
  writeFileSync(file, `${pid} ${signal} ${processStart(pid)}\n`);
  return () => rmSync(file, { force: true });
}

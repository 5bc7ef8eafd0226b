/** Runs the built pg-extract CLI as a user does: a real process, its exit code, stdout and stderr. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { live } from './services';

const run = promisify(execFile);
export const CLI = join(__dirname, '..', '..', 'src', 'cli', 'main.js');

export async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Runs a CLI command that must succeed (its stderr fails the test otherwise) and returns the JSON it printed. */
export async function cliJson<T = any>(args: string[], env: Record<string, string> = {}): Promise<T> {
  const { code, stdout, stderr } = await cli(args, env);
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout) as T;
}

/** The environment a CLI process needs to reach the live Temporal server, the test worker's queue and output root. */
export function liveCliEnv(taskQueue: string): Record<string, string> {
  return { TEMPORAL_ADDRESS: live().temporal.address, PG_EXTRACT_TASK_QUEUE: taskQueue, PG_EXTRACT_OUT_DIR: live().outRoot };
}

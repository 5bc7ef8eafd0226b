/** `pg-extract worker` as a real OS process, for crash and shutdown tests; its output is kept for scanning. */
import { type ChildProcess, spawn } from 'node:child_process';
import { recordServicePid } from '../../devenv/service-pids';
import { workerProcessEnv } from '../../src/worker/runtime';
import { CLI } from './cli';
import { live } from './services';
import { eventually } from './eventually';

export interface WorkerProcess {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

export async function spawnWorker(taskQueue: string, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const { temporal, pg, outRoot, bundlePath } = live();
  const child = spawn(process.execPath, [CLI, 'worker'], {
    env: workerProcessEnv({
      ...process.env,
      TEMPORAL_ADDRESS: temporal.address,
      PG_EXTRACT_TASK_QUEUE: taskQueue,
      PG_EXTRACT_OUT_DIR: outRoot,
      PG_EXTRACT_SOURCE_URL: pg.url,
      PG_EXTRACT_WORKFLOW_BUNDLE: bundlePath,
      ...env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  // A crashed test run would leave it polling; `.ci/stop-services` ends it by this record.
  const forget = recordServicePid('worker', child.pid!, 'SIGKILL');
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      forget();
      resolve(code);
    }),
  );
  const started = async (): Promise<boolean> => {
    if (child.exitCode !== null) throw new Error(`worker exited before it started:\n${output}`);
    return output.includes('pg-extract worker on');
  };
  await eventually(started, () => `the worker started:\n${output}`, { intervalMs: 25 });
  return { child, output: () => output, exited };
}

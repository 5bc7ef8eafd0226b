/**
 * One way for tests, the demo and benchmarks to get a real PostgreSQL:
 * `PG_URL` (or standard PG* variables) when given; else a throwaway cluster from the installed
 * server binaries (initdb into a temp dir, a free port, run as an unprivileged OS user when we
 * are root); else testcontainers when a Docker engine is reachable; else a clear error.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { recordServicePid } from './service-pids';

/** A running PostgreSQL and how to stop it. */
export interface PostgresService {
  /** A superuser connection URL. */
  url: string;
  origin: 'environment' | 'local-cluster' | 'testcontainers';
  /** Stops what this helper started (a kept cluster keeps its data); a no-op for a server it reused. */
  stop(): Promise<void>;
}

/** Options for {@link startPostgres}. */
export interface StartPostgresOptions {
  /** Keep the cluster here (and reuse it when it already runs) instead of a temp dir. */
  dataDir?: string;
  /** Port for a kept cluster; a free port otherwise. */
  port?: number;
  /** Extra `postgres -c` settings, e.g. `{ max_connections: '200' }`. */
  settings?: Record<string, string>;
  /** A hot standby of this primary (a local cluster, which trusts local replication as initdb's does): its base backup instead of initdb. */
  standbyOf?: string;
}

export const MISSING_POSTGRES_HINT =
  'No PostgreSQL available: set PG_URL=postgres://user:pass@host:port/db, or install the PostgreSQL server ' +
  'binaries (initdb, pg_ctl; Debian: apt-get install postgresql), or run a Docker engine for testcontainers.';

function envUrl(): string | undefined {
  if (process.env.PG_URL) return process.env.PG_URL;
  if (!process.env.PGHOST) return undefined;
  const { PGUSER = 'postgres', PGPASSWORD, PGHOST, PGPORT = '5432', PGDATABASE = 'postgres' } = process.env;
  const auth = PGPASSWORD ? `${encodeURIComponent(PGUSER)}:${encodeURIComponent(PGPASSWORD)}` : encodeURIComponent(PGUSER);
  return `postgres://${auth}@${PGHOST}:${PGPORT}/${PGDATABASE}`;
}

function serverBinDir(): string | undefined {
  const candidates: string[] = [];
  const pgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (pgConfig.status === 0) candidates.push(pgConfig.stdout.trim());
  if (existsSync('/usr/lib/postgresql')) {
    for (const v of readdirSync('/usr/lib/postgresql').sort().reverse()) candidates.push(`/usr/lib/postgresql/${v}/bin`);
  }
  candidates.push('/usr/local/bin', '/usr/bin');
  return candidates.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl')));
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/** initdb/pg_ctl refuse to run as root; pick an unprivileged account that exists (undefined: we are not root). */
export function clusterUser(): string | undefined {
  if (userInfo().uid !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    if (spawnSync('id', ['-u', name]).status === 0) return name;
  }
  throw new Error('running as root and no unprivileged user (postgres, nobody) exists to own a PostgreSQL cluster');
}

function runAs(user: string | undefined, command: string, args: string[]): void {
  const [file, argv] = user ? ['runuser', ['-u', user, '--', command, ...args]] : [command, args];
  execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The first line of postmaster.pid is the running server's pid. */
function postmasterPid(dataDir: string): number {
  return Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

async function startLocalCluster(binDir: string, options: StartPostgresOptions): Promise<PostgresService> {
  const user = clusterUser();
  const keep = options.dataDir !== undefined;
  const base = options.dataDir ?? mkdtempSync(join(tmpdir(), 'pg-extract-pg-'));
  const dataDir = join(base, 'data');
  mkdirSync(base, { recursive: true });
  chmodSync(base, 0o755);
  if (user) chownSync(base, Number(execFileSync('id', ['-u', user]).toString()), Number(execFileSync('id', ['-g', user]).toString()));
  const port = options.port ?? (await freePort());
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const pgCtl = join(binDir, 'pg_ctl');
  const running =
    keep && spawnSync(user ? 'runuser' : pgCtl, user ? ['-u', user, '--', pgCtl, 'status', '-D', dataDir] : ['status', '-D', dataDir]).status === 0;
  if (!running) {
    const log = join(base, 'server.log');
    try {
      if (options.standbyOf) {
        // -R writes standby.signal and primary_conninfo: the cluster starts as the primary's hot standby. A fast checkpoint:
        // the default spreads it over checkpoint_timeout, minutes before the copy can begin.
        runAs(user, join(binDir, 'pg_basebackup'), ['-d', options.standbyOf, '-D', dataDir, '-R', '-X', 'stream', '--checkpoint=fast', '--no-sync']);
      } else if (!existsSync(join(dataDir, 'PG_VERSION'))) {
        runAs(user, join(binDir, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync']);
      }
      const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: base, max_connections: '200', fsync: 'off', ...options.settings };
      const serverOpts = [`-p ${port}`, ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)].join(' ');
      runAs(user, pgCtl, ['-D', dataDir, '-o', serverOpts, '-l', log, '-w', '-t', '60', 'start']);
    } catch (err) {
      // The reason is often only in the server's log (a port taken, say), which removing a throwaway cluster takes with it.
      const said = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').slice(-5).join('\n') : '';
      if (!keep) rmSync(base, { recursive: true, force: true });
      throw new Error(`PostgreSQL did not start on port ${port}${said ? `; its log ends:\n${said}` : ''}`, { cause: err });
    }
  }
  // A throwaway cluster outlives a crashed run; SIGQUIT is PostgreSQL's immediate shutdown. A kept one stays up by design.
  const forget = keep ? () => undefined : recordServicePid('postgres', postmasterPid(dataDir), 'SIGQUIT');
  return {
    url,
    origin: 'local-cluster',
    stop: async () => {
      if (running) return;
      try {
        runAs(user, pgCtl, ['-D', dataDir, '-m', keep ? 'fast' : 'immediate', '-w', 'stop']);
      } finally {
        forget();
        if (!keep) rmSync(base, { recursive: true, force: true });
      }
    },
  };
}

function dockerReachable(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

async function startContainer(): Promise<PostgresService> {
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:16-alpine').start();
  return { url: container.getConnectionUri(), origin: 'testcontainers', stop: async () => void (await container.stop()) };
}

/** A throwaway cluster from the installed server binaries, whatever PG_URL says: a test's own primary, or its standby (`standbyOf`). */
export async function startLocalPostgres(options: StartPostgresOptions = {}): Promise<PostgresService> {
  const binDir = serverBinDir();
  if (!binDir) throw new Error(MISSING_POSTGRES_HINT);
  return startLocalCluster(binDir, options);
}

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresService> {
  const url = envUrl();
  if (url) return { url, origin: 'environment', stop: async () => undefined };
  const binDir = serverBinDir();
  if (binDir) return startLocalCluster(binDir, options);
  if (dockerReachable()) return startContainer();
  throw new Error(MISSING_POSTGRES_HINT);
}

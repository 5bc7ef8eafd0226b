/** The worker's process settings reach a process started with workerProcessEnv, and only such a process. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../devenv/project-root';
import { WORKER_MALLOC_ENV, WORKER_V8_FLAGS, threadPoolSizeFor, workerProcessEnv } from '../../src/worker/runtime';

/** Asks a fresh node process whether it started with the worker settings. */
function probe(env: NodeJS.ProcessEnv): { settings: boolean } {
  const script = `const r = require(${JSON.stringify(require.resolve('../../src/worker/runtime'))});
    console.log(JSON.stringify({ settings: r.hasWorkerRuntimeSettings() }));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' }));
}

/**
 * Starts a fresh node process that sizes libuv's pool for `activities` (unless null), then counts the
 * threads its first file-system call starts: the pool's.
 */
function poolThreads(activities: number | null, env: NodeJS.ProcessEnv): { size: number | null; tooSmall: boolean | null; started: number } {
  const script = `const { readdirSync, promises } = require('node:fs');
    const sized = ${activities === null ? 'null' : `require(${JSON.stringify(require.resolve('../../src/worker/runtime'))}).sizeThreadPool(${activities})`};
    const threads = () => readdirSync('/proc/self/task').length;
    const before = threads();
    promises.stat('/').then(() => console.log(JSON.stringify({ size: sized?.size ?? null, tooSmall: sized?.tooSmall ?? null, started: threads() - before })));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' }));
}

describe('worker runtime settings', () => {
  const bare: NodeJS.ProcessEnv = { PATH: process.env.PATH };

  it('a process started with workerProcessEnv has them; one started without does not', () => {
    assert.equal(probe(bare).settings, false);
    assert.equal(probe(workerProcessEnv(bare)).settings, true);
  });

  it('keeps NODE_OPTIONS the caller set and adds each flag once', () => {
    const env = workerProcessEnv({ ...bare, NODE_OPTIONS: '--enable-source-maps' });
    assert.equal(env.NODE_OPTIONS, `--enable-source-maps ${WORKER_V8_FLAGS.join(' ')}`);
    assert.equal(workerProcessEnv(env).NODE_OPTIONS, env.NODE_OPTIONS);
  });

  it('tells a flag from a longer one that starts like it', () => {
    const env = workerProcessEnv(bare);
    const lookalike = { ...env, NODE_OPTIONS: env.NODE_OPTIONS!.replace(/=(\d+)/, '=$10') };
    assert.equal(probe(lookalike).settings, false);
  });

  for (const name of Object.keys(WORKER_MALLOC_ENV)) {
    it(`sets ${name} unless the caller did, and leaves the caller's value alone`, () => {
      assert.equal(workerProcessEnv(bare)[name], WORKER_MALLOC_ENV[name as keyof typeof WORKER_MALLOC_ENV]);
      assert.equal(workerProcessEnv({ ...bare, [name]: '7' })[name], '7');
    });
  }

  it("libuv's pool gets a thread per concurrent activity and four more, unless UV_THREADPOOL_SIZE was set", () => {
    assert.equal(poolThreads(null, bare).started, 4, "libuv's own default");
    assert.deepEqual(poolThreads(8, bare), { size: 12, tooSmall: false, started: 12 });
    assert.deepEqual(poolThreads(20, bare), { size: 24, tooSmall: false, started: 24 });
    assert.deepEqual(poolThreads(8, { ...bare, UV_THREADPOOL_SIZE: '6' }), { size: 6, tooSmall: true, started: 6 });
    assert.equal(threadPoolSizeFor(1000), 1004);
  });

  it('the Dockerfile and `npm run worker`, which cannot import them, start the worker with every one of them', () => {
    const dockerEnv = readFileSync(join(projectRoot(), 'Dockerfile'), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('ENV '))
      .join(' ');
    const npmWorker = (JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.worker!;
    for (const [where, text] of [
      ['Dockerfile', dockerEnv],
      ['npm run worker', npmWorker],
    ] as const) {
      for (const [name, value] of Object.entries(WORKER_MALLOC_ENV)) assert.ok(text.includes(`${name}=${value}`), `${where} sets ${name}=${value}`);
      const words = text.split(/\s+/).map((word) => word.replace(/^NODE_OPTIONS=/, ''));
      for (const flag of WORKER_V8_FLAGS) assert.ok(words.includes(flag), `${where} passes ${flag}`);
    }
  });
});

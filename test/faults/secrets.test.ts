/**
 * A password in the source URL never reaches workflow history, worker logs, receipts or error
 * messages — on a successful run, on one whose source is unreachable, and on one whose password
 * was not percent-encoded.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import { seedMixedTable, settleSessions } from '../support/database';
import { live } from '../support/services';
import { spawnWorker } from '../support/worker-process';

const SECRET = 'pw-Sup3r-s3cret-1234';

function withPassword(url: string, port?: number): string {
  const u = new URL(url);
  u.username = 'postgres';
  u.password = SECRET;
  if (port !== undefined) u.port = String(port);
  return u.toString();
}

/** Every string reachable from `value`, including error causes and non-enumerable messages. */
function everything(value: unknown, seen = new Set<unknown>()): string {
  if (value === null || typeof value !== 'object') return String(value);
  if (seen.has(value)) return '';
  seen.add(value);
  const own = Object.getOwnPropertyNames(value).map((k) => everything((value as Record<string, unknown>)[k], seen));
  return `${own.join('\n')}\n${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? String(v) : v)) ?? ''}`;
}

describe('secrets (live)', function () {
  this.timeout(90_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('a successful run: no password in history, worker output, manifest or terminal receipt', async () => {
    const table = await seedMixedTable('secret', 2_000);
    const taskQueue = `secrets-${randomUUID()}`;
    // Trust authentication accepts any password, so the run succeeds with one in the URL.
    const worker = await spawnWorker(taskQueue, { PG_EXTRACT_SOURCE_URL: withPassword(live().pg.url) });
    try {
      const handle = await startExtraction(live().temporal.client, { table, partitions: 2 }, { taskQueue });
      const manifest = await waitForManifest(handle);
      const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'unknown' }] });
      await handle.result();
      const history = everything(await handle.fetchHistory());
      assert.ok(history.includes('holdSnapshot'), 'the history was read');
      for (const [where, text] of <[string, string][]>[
        ['history', history],
        ['manifest', everything(manifest)],
        ['terminal receipt', everything(receipt)],
        ['worker output', worker.output()],
      ]) {
        assert.ok(!text.includes(SECRET), `password found in ${where}`);
      }
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  it('a password whose @ and / are not percent-encoded: the run fails with SOURCE_URL_UNSUPPORTED, no part of the password dialled or named', async () => {
    const taskQueue = `secrets-${randomUUID()}`;
    // pg reads this URL's host as "leakyhalf", the password's second half: every error named it.
    const u = new URL(live().pg.url);
    const url = `postgres://postgres:pw@leakyhalf/x-${SECRET}@${u.host}${u.pathname}`;
    const worker = await spawnWorker(taskQueue, { PG_EXTRACT_SOURCE_URL: url });
    try {
      const handle = await startExtraction(live().temporal.client, { table: 'secret.t', partitions: 2 }, { taskQueue });
      const failure = await handle.result().then(
        () => assert.fail('the run should fail'),
        (err: unknown) => err,
      );
      const error = everything(failure);
      assert.match(error, /SOURCE_URL_UNSUPPORTED/);
      for (const [where, text] of <[string, string][]>[
        ['error', error],
        ['history', everything(await handle.fetchHistory())],
        ['worker output', worker.output()],
      ]) {
        assert.ok(!text.includes(SECRET) && !text.includes('leakyhalf'), `password found in ${where}`);
      }
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  it('an unreachable source: the run fails without the password in its error, history or logs', async () => {
    const taskQueue = `secrets-${randomUUID()}`;
    const worker = await spawnWorker(taskQueue, { PG_EXTRACT_SOURCE_URL: withPassword(live().pg.url, 1) });
    try {
      const handle = await startExtraction(live().temporal.client, { table: 'secret.t', partitions: 2 }, { taskQueue });
      const failure = await handle.result().then(
        () => assert.fail('the run should fail'),
        (err: unknown) => err,
      );
      assert.ok(failure instanceof WorkflowFailedError);
      const error = everything(failure);
      assert.match(error, /ECONNREFUSED/, 'the error says what went wrong');
      for (const [where, text] of <[string, string][]>[
        ['error', error],
        ['history', everything(await handle.fetchHistory())],
        ['worker output', worker.output()],
      ]) {
        assert.ok(!text.includes(SECRET), `password found in ${where}`);
      }
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });
});

/**
 * A source that accepts connections and never answers (a hung server, a proxy with no backend to
 * give): the run fails with CONNECT_TIMEOUT, as it fails on a refused connection, instead of
 * waiting for ever; a real source named with `?connect_timeout=N` connects as before.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { startExtraction } from '../../src/client';
import { ErrorCode } from '../../src/errors';
import { closeSession, openSession } from '../../src/postgres/session';
import { eventually } from '../support/eventually';
import { failureChain } from '../support/failure-chain';
import { settleSessions } from '../support/database';
import { live } from '../support/services';
import { type SilentServer, silentServer } from '../support/silent-server';
import { spawnWorker } from '../support/worker-process';

describe('a silent source (live)', function () {
  this.timeout(90_000);
  let server: SilentServer;
  before(async () => (server = await silentServer()));
  after(() => server.close());
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('fails the run with CONNECT_TIMEOUT, naming the host and not the password, leaving no connection open', async () => {
    const port = server.port();
    const taskQueue = `silent-${randomUUID()}`;
    const worker = await spawnWorker(taskQueue, { PG_EXTRACT_SOURCE_URL: `postgres://reader:pw-silent@127.0.0.1:${port}/app?connect_timeout=2` });
    try {
      const handle = await startExtraction(live().temporal.client, { table: 'public.t', partitions: 2 }, { taskQueue });
      const failure = await handle.result().then(
        () => assert.fail('the run should fail'),
        (err: unknown) => err,
      );
      assert.ok(failure instanceof WorkflowFailedError);
      const chain = failureChain(failure);
      assert.match(chain, new RegExp(`${ErrorCode.CONNECT_TIMEOUT}.*could not connect to 127\\.0\\.0\\.1:${port} within 2 s`, 's'));
      assert.ok(!chain.includes('pw-silent'), 'no password in the failure');
      assert.ok(server.accepted() >= 1, 'the worker connected to the silent server');
      await eventually(async () => server.open() === 0, 'every timed-out connection was closed', { timeoutMs: 5000 });
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  it('a real source with connect_timeout in its URL connects', async () => {
    const url = new URL(live().pg.url);
    url.searchParams.set('connect_timeout', '5');
    const client = await openSession(url.toString(), 'probe');
    try {
      assert.equal((await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one, 1);
    } finally {
      await closeSession(client);
    }
  });
});

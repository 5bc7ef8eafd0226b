/**
 * A stopping worker: an activity that hears its cancellation ends, and the worker with it (live: the
 * holder's planning waits on a lock another session holds, and its statement is cancelled on the
 * server); one that does not (a connect to a server that never answers, with a long
 * connect_timeout) ends the worker's run with an error after its force time instead of holding the
 * stop for ever.
 */
import assert from 'node:assert/strict';
import { startExtraction } from '../../src/client';
import { admin, settleSessions } from '../support/database';
import { eventually } from '../support/eventually';
import { live } from '../support/services';
import { silentServer } from '../support/silent-server';
import { startTestWorker } from '../support/worker';

describe('worker shutdown (live)', function () {
  this.timeout(120_000);
  before(() => admin().query('DROP SCHEMA IF EXISTS wstop CASCADE; CREATE SCHEMA wstop; CREATE TABLE wstop.t (id int PRIMARY KEY)'));
  after(() => admin().query('DROP SCHEMA wstop CASCADE'));

  it('a holder waiting for its table lock is cancelled on the server when its worker stops: the worker ends cleanly at once, and no session of ours waits on (it waited for the lock timeout)', async () => {
    const locker = await admin().connect();
    try {
      await locker.query('BEGIN; LOCK TABLE wstop.t IN ACCESS EXCLUSIVE MODE');
      const { worker, running, taskQueue } = await startTestWorker({ shutdownForceTime: '20 seconds' });
      const handle = await startExtraction(live().temporal.client, { table: 'wstop.t', partitions: 2, timeouts: { lockTimeoutMs: 90_000 } }, { taskQueue });
      const waiting = async () =>
        (await admin().query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator' AND wait_event_type = 'Lock'`)).rowCount === 1;
      await eventually(waiting, 'the coordinator waiting for its lock', { timeoutMs: 30_000 });
      const stopped = Date.now();
      worker.shutdown();
      await running;
      const took = Date.now() - stopped;
      assert.ok(took < 10_000, `stopped after ${took} ms, not the lock's 90 s`);
      assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
      await handle.terminate('the test is over');
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
  });

  it("an activity stuck past the force time ends the worker's run with an error (it waited for ever)", async () => {
    const server = await silentServer();
    try {
      const sourceUrl = `postgres://reader@127.0.0.1:${server.port()}/db?connect_timeout=90`;
      const { worker, running, taskQueue } = await startTestWorker({ shutdownForceTime: '1 second', sourceUrl });
      const handle = await startExtraction(live().temporal.client, { table: 'wstop.t', partitions: 2 }, { taskQueue });
      await eventually(async () => server.open() > 0, 'the holder connecting to the silent source', { timeoutMs: 30_000 });
      const stopped = Date.now();
      worker.shutdown();
      // The holder's worker times out (GracefulShutdownPeriodExpiredError); the main one, sharing its connection, may fail first.
      await assert.rejects(running);
      const took = Date.now() - stopped;
      assert.ok(took < 30_000, `stopped after ${took} ms, not the connect's 90 s`);
      await handle.terminate('the test is over');
    } finally {
      await server.close();
    }
  });
});

/**
 * A stopping worker whose activity does not end: its run ends with an error after its force time
 * instead of holding the stop for ever (live: the holder's planning waits on a lock another
 * session holds, and does not hear the cancellation).
 */
import assert from 'node:assert/strict';
import { startExtraction } from '../../src/client';
import { admin, settleSessions } from '../support/database';
import { eventually } from '../support/eventually';
import { live } from '../support/services';
import { startTestWorker } from '../support/worker';

describe('worker shutdown (live)', function () {
  this.timeout(120_000);
  before(() => admin().query('DROP SCHEMA IF EXISTS wstop CASCADE; CREATE SCHEMA wstop; CREATE TABLE wstop.t (id int PRIMARY KEY)'));
  after(() => admin().query('DROP SCHEMA wstop CASCADE'));

  it("an activity stuck past the force time ends the worker's run with an error (it waited for the lock timeout, or for ever)", async () => {
    const locker = await admin().connect();
    try {
      await locker.query('BEGIN; LOCK TABLE wstop.t IN ACCESS EXCLUSIVE MODE');
      const { worker, running, taskQueue } = await startTestWorker({ shutdownForceTime: '1 second' });
      const handle = await startExtraction(live().temporal.client, { table: 'wstop.t', partitions: 2, timeouts: { lockTimeoutMs: 90_000 } }, { taskQueue });
      const waiting = async () =>
        (await admin().query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator' AND wait_event_type = 'Lock'`)).rowCount === 1;
      await eventually(waiting, 'the coordinator waiting for its lock', { timeoutMs: 30_000 });
      const stopped = Date.now();
      worker.shutdown();
      // The holder's worker times out (GracefulShutdownPeriodExpiredError); the main one, sharing its connection, may fail first.
      await assert.rejects(running);
      const took = Date.now() - stopped;
      assert.ok(took < 30_000, `stopped after ${took} ms, not the lock's 90 s`);
      await handle.terminate('the test is over');
    } finally {
      await admin().query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator'`);
      await locker.query('ROLLBACK');
      locker.release();
    }
    assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
  });
});

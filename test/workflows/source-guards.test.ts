/**
 * The workflow's side of the source guards (live Temporal + PostgreSQL): `timeouts.lockTimeoutMs`
 * bounds how long a run waits for its table lock, and every copyPartition call carries the plan's
 * snapshot digest and source identity for the partition to prove.
 */
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import { admin, seedMixedTable, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

describe('source guards in the workflow (live Temporal + PostgreSQL)', function () {
  this.timeout(120_000);
  let table: string;

  before(async () => {
    table = await seedMixedTable('sg', 2_000);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('a table held ACCESS EXCLUSIVE fails the run with LOCK_TIMEOUT after timeouts.lockTimeoutMs, naming the holder', async () => {
    const holder = await admin().connect();
    try {
      const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await holder.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      await withWorker(async ({ taskQueue }) => {
        const started = Date.now();
        const handle = await startExtraction(live().temporal.client, { table, partitions: 2, timeouts: { lockTimeoutMs: 1_000 } }, { taskQueue });
        await assert.rejects(handle.result(), (err: unknown) => {
          assert.ok(err instanceof WorkflowFailedError);
          const failure = JSON.stringify(err.cause);
          assert.match(failure, /LOCK_TIMEOUT/);
          assert.match(failure, new RegExp(`pid ${pid}\\b`));
          return true;
        });
        assert.ok(Date.now() - started < 20_000, 'the run did not wait for the lock holder');
      });
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it("every copyPartition call carries the plan's snapshot digest and source identity", async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { table, partitions: 2 }, { taskQueue });
      const manifest = await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      const identity = await admin().query<{ system: string; db: string }>(
        `SELECT (SELECT system_identifier::text FROM pg_control_system()) AS system, (SELECT oid::int8::text FROM pg_database WHERE datname = current_database()) AS db`,
      );
      const requests = ((await handle.fetchHistory()).events ?? [])
        .map((e) => e.activityTaskScheduledEventAttributes)
        .filter((a) => a?.activityType?.name === 'copyPartition')
        .map((a) => JSON.parse(Buffer.from(a!.input!.payloads![0]!.data!).toString('utf8')));
      assert.equal(requests.length, 2);
      for (const r of requests) {
        assert.equal(r.snapshotDigest, manifest.snapshotDigest);
        assert.deepEqual(r.source, { systemIdentifier: identity.rows[0]!.system, databaseOid: Number(identity.rows[0]!.db) });
      }
    });
  });
});

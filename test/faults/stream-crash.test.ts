/**
 * SIGKILL of the worker process while `--via stream` copies into the target: the target holds
 * nothing of the killed load (its transaction never committed), the load runs again on another
 * worker (dropping the staging tables the dead one left) and loads the exact rows once; no
 * staging table and no session is left.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startExtraction } from '../../src/client';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';
import { type WorkerProcess, spawnWorker } from '../support/worker-process';
import { MIXED_TARGET_DDL, onTarget, orphanStagingTables, recreateTarget, targetDigest, targetStatement, targetUrl } from '../target/target-db';

describe('worker process killed mid-stream (live)', function () {
  this.timeout(120_000);
  const workers: WorkerProcess[] = [];
  afterEach(async () => {
    for (const w of workers.splice(0)) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  });

  it('SIGKILL while the partitions stream → the target holds nothing, the retried load loads the exact rows once', async () => {
    const table = await seedMixedTable('strmcrash', 150_000);
    const expected = await tableDigest(`SELECT * FROM ${table}`);
    await recreateTarget(MIXED_TARGET_DDL);
    const env = { PG_EXTRACT_TARGET_WAREHOUSE_URL: targetUrl() };
    const taskQueue = `strmcrash-${randomUUID()}`;
    const first = await spawnWorker(taskQueue, env);
    workers.push(first);
    const handle = await startExtraction(
      live().temporal.client,
      { table, partitions: 3, target: { name: 'warehouse', table: 'dst.t', via: 'stream' }, timeouts: { loadHeartbeatMs: 2000 } },
      { taskQueue },
    );
    await targetStatement('COPY');
    first.child.kill('SIGKILL');
    assert.equal(await first.exited, null, 'killed by the signal');
    const targetRows = await onTarget(async (c) => (await c.query('SELECT count(*)::int AS n FROM dst.t')).rows[0].n);
    assert.equal(targetRows, 0, 'the killed load committed nothing');

    const second = await spawnWorker(taskQueue, env);
    workers.push(second);
    const result = (await handle.result()) as ExtractionResult;
    assert.equal(result.terminalReceipt.outcome, 'success');
    const { events } = await handle.fetchHistory();
    const attempts = events!.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []));
    assert.ok(
      attempts.some((n) => n! >= 2),
      'the load ran again after the kill',
    );
    assert.deepEqual(await targetDigest(), expected, 'exact rows, loaded once');
    assert.equal(await orphanStagingTables(), 0, 'no staging table left');
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
    assert.deepEqual(await settleSessions(10_000), [], 'no session left');
  });
});

/**
 * A stopped (SIGSTOP) worker holding the snapshot: its kernel still answers TCP keepalives and its
 * socket stays open, so only the holder transaction's own idle timeout ends the coordinator backend
 * and releases the xmin horizon. The README states the bound: 30 s after the holder's last probe.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startExtraction } from '../../src/client';
import { admin, seedMixedTable, settleSessions } from '../support/database';
import { live } from '../support/services';
import { type WorkerProcess, spawnWorker } from '../support/worker-process';
import { eventually } from '../support/eventually';

/** The holder's idle_in_transaction_session_timeout (src/postgres/snapshot-coordinator.ts). */
const HOLDER_IDLE_TIMEOUT_MS = 30_000;
/** Polling and a busy machine. */
const MARGIN_MS = 10_000;

/** The coordinator backend once its snapshot exists (it holds back the xmin horizon). */
async function coordinatorWithSnapshot(): Promise<number> {
  const coordinator = async (): Promise<number | undefined> =>
    (await admin().query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator' AND backend_xmin IS NOT NULL`))
      .rows[0]?.pid;
  return eventually(coordinator, 'a coordinator snapshot appeared', { intervalMs: 5 });
}

/** The backend's state while it still holds a snapshot (pins xmin), else null (gone, or its transaction ended). */
async function pinning(pid: number): Promise<string | null> {
  const r = await admin().query<{ state: string }>(
    `SELECT state || ': ' || left(query, 80) AS state FROM pg_stat_activity WHERE pid = $1 AND backend_xmin IS NOT NULL`,
    [pid],
  );
  return r.rows[0]?.state ?? null;
}

describe('worker holding the snapshot is stopped (live)', function () {
  this.timeout(HOLDER_IDLE_TIMEOUT_MS + MARGIN_MS + 60_000);
  let worker: WorkerProcess | undefined;
  before(async () => void (await seedMixedTable('stopped', 300_000)));
  after(async () => {
    if (worker && worker.child.exitCode === null) {
      worker.child.kill('SIGKILL'); // ends a stopped process too
      await worker.exited;
    }
    assert.deepEqual(await settleSessions(10_000), [], 'no session of ours is left');
  });

  it(`its coordinator backend ends within ${HOLDER_IDLE_TIMEOUT_MS / 1000} s (+ margin), not when the worker comes back`, async () => {
    const taskQueue = `stopped-${randomUUID()}`;
    worker = await spawnWorker(taskQueue);
    const handle = await startExtraction(live().temporal.client, { table: 'stopped.t', partitions: 8, outDir: 'holder-stopped' }, { taskQueue });
    try {
      const pid = await coordinatorWithSnapshot();
      worker.child.kill('SIGSTOP');
      const stoppedAt = Date.now();
      // Waits at most the idle timeout plus a margin; the assertion below says what was left.
      await eventually(async () => (await pinning(pid)) === null, 'the backend ended', {
        timeoutMs: HOLDER_IDLE_TIMEOUT_MS + MARGIN_MS,
        intervalMs: 250,
      }).catch(() => undefined);
      const elapsed = Date.now() - stoppedAt;
      const state = await pinning(pid);
      assert.equal(state, null, `the coordinator backend ${pid} still pins the snapshot ${elapsed} ms after its worker stopped (${state})`);
      console.log(`      coordinator backend gone ${elapsed} ms after SIGSTOP`);
    } finally {
      await handle.terminate('test over').catch(() => undefined);
    }
  });
});

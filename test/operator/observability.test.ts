/** What an operator reads: pino JSON logs from the worker process and its Prometheus endpoint. */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startExtraction, waitForManifest } from '../../src/client';
import { freePort } from '../../devenv/postgres-service';
import { commitUpdate } from '../../src/contract/definitions';
import { seedMixedTable, settleSessions } from '../support/database';
import { live } from '../support/services';
import { spawnWorker } from '../support/worker-process';
import { eventually } from '../support/eventually';

/** The value of the first sample of `name` whose labels include every `labels` pair. */
function sample(metrics: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of metrics.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return undefined;
}

describe('observability (live)', function () {
  this.timeout(90_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('the worker, started as a user starts it (it bundles its own workflows), logs pino JSON and serves our counters beside Temporal metrics on PG_EXTRACT_METRICS_ADDRESS', async () => {
    const table = await seedMixedTable('observe', 3_000);
    const taskQueue = `observe-${randomUUID()}`;
    const address = `127.0.0.1:${await freePort()}`;
    // No prebuilt bundle: the worker bundles its workflow code itself, as `pg-extract worker` does (the Docker image has one).
    const worker = await spawnWorker(taskQueue, { PG_EXTRACT_METRICS_ADDRESS: address, PG_EXTRACT_LOG_LEVEL: 'info', PG_EXTRACT_WORKFLOW_BUNDLE: '' });
    try {
      const handle = await startExtraction(live().temporal.client, { table, partitions: 3 }, { taskQueue });
      await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      let metrics = '';
      const scraped = async (): Promise<boolean> => {
        metrics = await (await fetch(`http://${address}/metrics`)).text();
        return sample(metrics, 'pg_extract_outcomes', { outcome: 'success' }) !== undefined;
      };
      await eventually(scraped, () => `pg_extract_outcomes in:\n${metrics.slice(0, 2000)}`, { timeoutMs: 10_000, intervalMs: 250 });
      assert.equal(sample(metrics, 'pg_extract_rows', { strategy: 'partition' }), 3_000);
      assert.equal(sample(metrics, 'pg_extract_partitions', { strategy: 'partition' }), 3);
      assert.ok((sample(metrics, 'pg_extract_bytes', { strategy: 'partition' }) ?? 0) > 0);
      assert.equal(sample(metrics, 'pg_extract_attempts', { result: 'completed' }), 1);
      assert.ok(metrics.includes('temporal_'), 'the Temporal worker metrics are on the same endpoint');

      const lines = worker
        .output()
        .split('\n')
        .filter((l) => l.trim());
      const records = lines.map(
        (l) => JSON.parse(l) as { level: number; msg: string; service: string; maxConcurrentActivities?: number; threadPoolSize?: number },
      );
      assert.ok(
        records.length > 0 && records.every((r) => typeof r.level === 'number' && typeof r.msg === 'string' && r.service === 'pg-extract'),
        'every line is a pino record',
      );
      const started = records.find((r) => r.msg.startsWith('pg-extract worker on'));
      // libuv's pool gets a thread per concurrent activity and four more (test/worker/runtime.test.ts counts them).
      assert.deepEqual([started?.maxConcurrentActivities, started?.threadPoolSize], [8, 12]);
      // It bundled in a child process; Temporal's bundler, had it run in the worker, would have logged 'Workflow bundle created'.
      assert.ok(records.some((r) => r.msg.startsWith('bundling the workflows in a child process')));
      assert.ok(!records.some((r) => r.msg === 'Workflow bundle created'), 'webpack did not run in the worker');
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });
});

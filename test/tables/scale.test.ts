/**
 * Table sets at scale, live: 2,000 small tables of 50 columns in one run, loaded into a target in one
 * transaction, and one table split into 200 partitions. Reports each run's history (events and bytes, the parent's and its batches')
 * against Temporal's limits: 51,200 events and 50 MB per history, 2 MB per payload.
 */
import assert from 'node:assert/strict';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';
import { TARGET_DB, onTarget, recreateTarget, targetUrl } from '../target/target-db';

const TABLES = 2000;
/**
 * Columns besides id and v: with the 100,000 column names of the run in history (a plan did carry
 * them), the plan's and the data package request's payloads were over Temporal's 2 MB.
 */
const WIDE_COLUMNS = Array.from({ length: 48 }, (_, i) => `attribute_number_${String(i).padStart(2, '0')} text`).join(', ');

/** Events and encoded bytes of a workflow's history. */
async function historyOf(workflowId: string): Promise<{ events: number; bytes: number; largestEvent: number }> {
  // A page of a few-MB history is larger than gRPC's default 4 MB message: read it on a connection that takes 64 MB.
  const connection = await Connection.connect({ address: live().temporal.address, channelArgs: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 } });
  const history = await new Client({ connection }).workflow
    .getHandle(workflowId)
    .fetchHistory()
    .finally(() => connection.close());
  const events = history.events ?? [];
  const sizes = events.map((e) => temporal.api.history.v1.HistoryEvent.encode(e).finish().byteLength);
  return { events: events.length, bytes: temporal.api.history.v1.History.encode(history).finish().byteLength, largestEvent: Math.max(...sizes) };
}

/** The parent's history and each of its batch workflows' (children named `<attempt key>/batch-N`). */
async function runHistories(
  handle: WorkflowHandle,
): Promise<{ parent: Awaited<ReturnType<typeof historyOf>>; batches: Awaited<ReturnType<typeof historyOf>>[] }> {
  const parent = await historyOf(handle.workflowId);
  const { runId } = await handle.describe();
  const batches = [];
  for (let i = 0; ; i++) {
    const batch = await historyOf(`${handle.workflowId}/${runId}/attempt-1/batch-${i}`).catch(() => null);
    if (!batch) break;
    batches.push(batch);
  }
  return { parent, batches };
}

function report(what: string, h: Awaited<ReturnType<typeof runHistories>>): void {
  const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;
  console.log(`      ${what}: parent ${h.parent.events} events, ${mb(h.parent.bytes)} (largest event ${mb(h.parent.largestEvent)})`);
  h.batches.forEach((b, i) => console.log(`        batch ${i}: ${b.events} events, ${mb(b.bytes)} (largest event ${mb(b.largestEvent)})`));
  for (const x of [h.parent, ...h.batches]) {
    assert.ok(x.events < 10_000, `under Temporal's 10,240-event warning (${x.events})`);
    assert.ok(x.bytes < 10e6, `under Temporal's 10 MB history warning (${x.bytes})`);
    assert.ok(x.largestEvent < 2e6, `every payload under 2 MB (${x.largestEvent})`);
  }
}

/** Drops tscale a few hundred tables per transaction (one DROP SCHEMA CASCADE would take 8,000 locks). */
async function dropScale(): Promise<void> {
  for (;;) {
    const r = await admin()
      .query(
        `SELECT string_agg(format('tscale.%I', relname), ', ') AS names FROM (SELECT relname FROM pg_class WHERE relnamespace = 'tscale'::regnamespace AND relkind = 'r' LIMIT 250) t`,
      )
      .catch(() => null);
    if (!r?.rows[0]?.names) break;
    await admin().query(`DROP TABLE ${r.rows[0].names}`);
  }
  await admin().query('DROP SCHEMA IF EXISTS tscale');
}

describe('table sets at scale (live)', function () {
  this.timeout(900_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it(`${TABLES} small tables of 50 columns in one run, loaded in one target transaction: one snapshot, one file each, history bounded by batches, no payload growing with the columns`, async () => {
    await dropScale();
    await admin().query('CREATE SCHEMA tscale');
    await recreateTarget('CREATE SCHEMA tscale');
    // In steps: one transaction creating 2,000 tables (and their indexes) would take 8,000 locks.
    const createTables = (rows: boolean) => (from: number) =>
      `DO $$ BEGIN FOR i IN ${from}..${from + 249} LOOP
        EXECUTE format('CREATE TABLE tscale.%I (id int PRIMARY KEY, v text, ${WIDE_COLUMNS})', 't' || lpad(i::text, 4, '0'));
        ${rows ? "EXECUTE format('INSERT INTO tscale.%I SELECT g, %L || g FROM generate_series(1, 3) g', 't' || lpad(i::text, 4, '0'), 'row ');" : ''}
      END LOOP; END $$`;
    for (let from = 0; from < TABLES; from += 250) {
      await admin().query(createTables(true)(from));
      await onTarget((c) => c.query(createTables(false)(from)));
    }
    try {
      await withWorker(
        async ({ taskQueue }) => {
          const started = Date.now();
          const target = { name: 'warehouse', schema: 'tscale' };
          const handle = await startExtraction(live().temporal.client, { schema: 'tscale', maxInFlight: 16, target }, { taskQueue });
          const manifest = await waitForManifest(handle, 1000);
          const extracted = (Date.now() - started) / 1000;
          assert.equal(manifest.files.length, TABLES);
          assert.equal(new Set(manifest.files.map((f) => f.table)).size, TABLES);
          assert.equal(manifest.totals.rows, 3 * TABLES);
          assert.ok(manifest.files.every((f) => f.snapshotDigest === manifest.snapshotDigest));
          const result = (await handle.result()) as ExtractionResult;
          console.log(
            `      ${TABLES} tables extracted in ${extracted.toFixed(1)} s, loaded ${((Date.now() - started) / 1000 - extracted).toFixed(1)} s later`,
          );
          assert.deepEqual([result.terminalReceipt.outcome, result.load], ['success', { outcome: 'committed', reason: null, rows: 3 * TABLES }]);
          const loaded = await onTarget(async (c) => (await c.query(`SELECT count(*)::int AS n, max(v) AS v FROM tscale.t1999`)).rows[0]);
          assert.deepEqual(loaded, { n: 3, v: 'row 3' });
          report(`${TABLES} tables`, await runHistories(handle));
        },
        { maxConcurrentActivities: 32, targets: { warehouse: targetUrl() } },
      );
    } finally {
      await dropScale();
      await admin().query(`DROP DATABASE IF EXISTS ${TARGET_DB} WITH (FORCE)`);
    }
  });

  it('one table split into 200 partitions: history bounded', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS tscale200 CASCADE; CREATE SCHEMA tscale200;
      CREATE TABLE tscale200.t (id int PRIMARY KEY, v text);
      INSERT INTO tscale200.t SELECT g, 'row ' || g FROM generate_series(1, 200000) g; ANALYZE tscale200.t`);
    try {
      await withWorker(
        async ({ taskQueue }) => {
          const handle = await startExtraction(live().temporal.client, { table: 'tscale200.t', partitions: 200 }, { taskQueue });
          const manifest = await waitForManifest(handle, 1000);
          assert.equal(manifest.files.length, 200);
          assert.equal(manifest.totals.rows, 200_000);
          await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
          await handle.result();
          report('200 partitions', await runHistories(handle));
        },
        { maxConcurrentActivities: 32 },
      );
    } finally {
      await admin().query('DROP SCHEMA tscale200 CASCADE');
    }
  });
});

/**
 * The source misbehaving around the export: a server that kills idle transactions after one
 * second, and a writer updating the table over a thousand rows a second while it is exported.
 */
import assert from 'node:assert/strict';
import { Client } from 'pg';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { admin, manifestDigest, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

function databaseUrl(name: string): string {
  const url = new URL(live().pg.url);
  url.pathname = `/${name}`;
  return url.toString();
}

async function freshDatabase(name: string): Promise<string> {
  await admin().query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin().query(`CREATE DATABASE ${name}`);
  return databaseUrl(name);
}

describe('source under stress (live)', function () {
  this.timeout(120_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('idle_in_transaction_session_timeout = 1s: the coordinator survives (it turns it off for itself) while partitions run', async () => {
    const url = await freshDatabase('idle_timeout');
    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      await db.query(`ALTER DATABASE idle_timeout SET idle_in_transaction_session_timeout = '1s'`);
      await db.query(`CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT g, repeat('z', 100) FROM generate_series(1, 100000) g`);
      // The setting really kills an idle transaction: a control session dies after 1 s.
      const control = new Client({ connectionString: url });
      control.on('error', () => undefined);
      await control.connect();
      await control.query('BEGIN');
      await new Promise((r) => setTimeout(r, 1500));
      await assert.rejects(control.query('SELECT 1'));
      await control.end().catch(() => undefined);

      await withWorker(
        async ({ taskQueue }) => {
          // One activity at a time: the coordinator sits idle in its transaction for seconds (96
          // partitions of about 25 ms each; 48 came to under 1.2 s once files got faster to write).
          const handle = await startExtraction(
            live().temporal.client,
            { table: 'public.t', partitions: 96, gzip: true, outDir: 'idle-timeout' },
            { taskQueue },
          );
          let longestIdleMs = 0;
          let watching = true;
          const watcher = (async () => {
            while (watching) {
              const r = await admin().query(
                `SELECT (extract(epoch FROM now() - state_change) * 1000)::int AS ms FROM pg_stat_activity
                  WHERE application_name = 'pg-extract/coordinator' AND state = 'idle in transaction'`,
              );
              longestIdleMs = Math.max(longestIdleMs, r.rows[0]?.ms ?? 0);
              await new Promise((res) => setTimeout(res, 50));
            }
          })();
          const manifest = await waitForManifest(handle);
          watching = false;
          await watcher;
          assert.ok(longestIdleMs > 1200, `the coordinator sat idle in its transaction past the 1 s timeout (${longestIdleMs} ms)`);
          await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
          const result = (await handle.result()) as ExtractionResult;
          assert.deepEqual(
            result.attempts.map((a) => a.result),
            ['completed'],
            'the first snapshot survived',
          );
          assert.equal(manifest.totals.rows, 100_000);
        },
        { sourceUrl: url, maxConcurrentActivities: 1 },
      );
    } finally {
      await db.end();
      await admin().query(`DROP DATABASE IF EXISTS idle_timeout WITH (FORCE)`);
    }
  });

  it('a writer updating rows throughout the export: the files equal the table at one instant, later updates absent', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS busy CASCADE; CREATE SCHEMA busy; CREATE TABLE busy.t (id int PRIMARY KEY, v int NOT NULL DEFAULT 0)`);
    await admin().query(`INSERT INTO busy.t (id) SELECT g FROM generate_series(1, 50000) g`);
    // Each batch sets v = batch number on 200 random rows, in its own transaction; the log lets
    // the test rebuild the table as of any batch boundary.
    const log: { batch: number; ids: number[] }[] = [];
    const writer = new Client({ connectionString: live().pg.url, application_name: 'pg-extract-test-writer' });
    await writer.connect();
    let writing = true;
    const startedAt = Date.now();
    const writes = (async () => {
      for (let batch = 1; writing; batch++) {
        const ids = Array.from({ length: 200 }, () => 1 + Math.floor(Math.random() * 50000));
        await writer.query('UPDATE busy.t SET v = $1 WHERE id = ANY($2::int[])', [batch, ids]);
        log.push({ batch, ids });
      }
    })();
    try {
      await new Promise((r) => setTimeout(r, 300));
      await withWorker(async ({ taskQueue }) => {
        const handle = await startExtraction(live().temporal.client, { table: 'busy.t', partitions: 4, outDir: 'busy' }, { taskQueue });
        const manifest = await waitForManifest(handle);
        await new Promise((r) => setTimeout(r, 300));
        writing = false;
        await writes;
        // Measured, not asserted: how busy the source was is the machine's business; that it was busy
        // while the snapshot was taken (writes on both sides of it) is the precondition checked below.
        const rate = Math.round((log.length * 200 * 1000) / (Date.now() - startedAt));

        // The exported v values: the largest batch seen is the instant of the snapshot.
        const exported = await manifestDigest('busy.t', manifest);
        const seen = await loadMaxBatch(manifest.files.map((f) => f.path));
        assert.ok(seen > 0 && seen < log.length, `snapshot inside the write stream (batch ${seen} of ${log.length}, ${rate} row updates/s)`);
        const state = new Map<number, number>();
        for (const { batch, ids } of log) if (batch <= seen) for (const id of ids) state.set(id, batch);
        const values = Array.from({ length: 50000 }, (_, i) => `(${i + 1},${state.get(i + 1) ?? 0})`).join(',');
        const atSnapshot = await tableDigest(`SELECT * FROM (VALUES ${values}) AS x(id, v)`);
        assert.deepEqual(exported, atSnapshot, 'exactly the table as of that batch: count and checksum');
        await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      });
    } finally {
      writing = false;
      await writes.catch(() => undefined);
      await writer.end();
    }
  });
});

/** The largest `v` in the exported files (CSV with header, id,v). */
async function loadMaxBatch(paths: string[]): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  let max = 0;
  for (const p of paths) {
    for (const line of (await readFile(p, 'utf8')).split('\n').slice(1)) {
      const v = Number(line.split(',')[1]);
      if (v > max) max = v;
    }
  }
  return max;
}

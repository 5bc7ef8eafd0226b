/**
 * Streaming rows, batched COPY and internal query against real PostgreSQL: acquisition on first
 * consumption, completion only after exhaustion, commit or rollback by outcome, staging guarded.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from 'pg';
import { ErrorCode } from '../../src/errors';
import { BatchedCopy, type BatchFile } from '../../src/postgres/batched-copy';
import { resolveTable } from '../../src/postgres/catalog';
import { insertSelectIntoStaging } from '../../src/target/select-into-staging';
import { closeSession, openSession } from '../../src/postgres/session';
import { DEFAULT_FILE_MODE } from '../../src/storage/output-root';
import { LocalFileSink } from '../../src/storage/local-file-sink';
import { utcMicros } from '../../src/lifecycle';
import { admin, filesDigest, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';

async function sessionState(client: Client): Promise<{ state: string; inTransaction: boolean }> {
  const pid = (client as unknown as { processID: number }).processID;
  const r = await admin().query(`SELECT state, xact_start IS NOT NULL AS in_tx FROM pg_stat_activity WHERE pid = $1`, [pid]);
  return { state: r.rows[0].state, inTransaction: r.rows[0].in_tx };
}

async function seed(schema: string, rows: number, nullEvery = 0): Promise<void> {
  await admin().query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (id int, v text)`);
  await admin().query(`INSERT INTO ${schema}.t SELECT CASE WHEN $2 > 0 AND g % $2 = 0 THEN NULL ELSE g END, 'v' || g FROM generate_series(1, $1::int) g`, [
    rows,
    nullEvery,
  ]);
  await admin().query(`CREATE UNIQUE INDEX ON ${schema}.t (id)`);
}

/** Batched COPY into local files `batch-N.csv[.gz]` in `folder`. */
function batchOptions(folder: string, gzip: boolean) {
  return {
    format: { format: 'csv' as const, header: false, gzip },
    sink: async (index: number) => new LocalFileSink(join(folder, `batch-${index}.csv${gzip ? '.gz' : ''}`), DEFAULT_FILE_MODE),
  };
}

describe('lazy strategies (live PostgreSQL)', () => {
  let client: Client;
  beforeEach(async () => {
    client = await openSession(live().pg.url, 'stream');
  });
  afterEach(async () => {
    await closeSession(client);
    assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
  });

  describe('batched COPY', () => {
    it('is pending until first consumption; completes only after the terminal empty batch; NULL keys once', async () => {
      await seed('bc', 10_000, 97);
      const folder = await mkdtemp(join(live().outRoot, 'bc-'));
      const copy = new BatchedCopy(client, await resolveTable(client, { schema: 'bc', table: 't' }), {
        ...batchOptions(folder, false),
        bounds: { maxRows: 3_000, maxBytes: null },
      });
      assert.equal(copy.authority.state, 'pending');
      const batches: BatchFile[] = [];
      for await (const batch of copy) {
        batches.push(batch);
        if (batches.length === 1) await admin().query(`INSERT INTO bc.t VALUES (20000, 'late')`);
        assert.equal(copy.authority.state, 'reading', `batch ${batch.index}: complete only after the terminal empty batch`);
      }
      assert.equal(copy.authority.state, 'complete');
      assert.ok(
        batches.every((b) => b.rows > 0 && b.rows <= 3_000),
        'no empty file, none over the bound',
      );
      assert.deepEqual(
        await filesDigest('bc.t', copy.files, { format: 'csv', header: false }),
        await tableDigest(`SELECT * FROM bc.t WHERE id IS DISTINCT FROM 20000`),
      );
      assert.equal((await sessionState(client)).inTransaction, true, 'open until the read is ended');
      await copy.endRead();
      assert.equal((await sessionState(client)).inTransaction, false);
    });

    it('a uuid key batches by keyset too (no max() over uuid)', async () => {
      await admin().query(`DROP SCHEMA IF EXISTS bu CASCADE; CREATE SCHEMA bu; CREATE TABLE bu.t (id uuid PRIMARY KEY, v int)`);
      await admin().query(`INSERT INTO bu.t SELECT md5(g::text)::uuid, g FROM generate_series(1, 5000) g`);
      const folder = await mkdtemp(join(live().outRoot, 'bu-'));
      const copy = new BatchedCopy(client, await resolveTable(client, { schema: 'bu', table: 't' }), {
        ...batchOptions(folder, false),
        bounds: { maxRows: 1_500, maxBytes: null },
      });
      const batches: BatchFile[] = [];
      for await (const b of copy) batches.push(b);
      assert.deepEqual(
        batches.map((b) => b.rows),
        [1500, 1500, 1500, 500],
        'four keyset batches; a primary key has no NULL batch, the terminal empty batch no file',
      );
      assert.deepEqual(await filesDigest('bu.t', copy.files, { format: 'csv', header: false }), await tableDigest('SELECT * FROM bu.t'));
      await copy.endRead();
    });

    it('without a key it batches by ctid page ranges', async () => {
      await admin().query(`DROP SCHEMA IF EXISTS bp CASCADE; CREATE SCHEMA bp; CREATE TABLE bp.t (v text)`);
      await admin().query(`INSERT INTO bp.t SELECT repeat('y', 100) || g FROM generate_series(1, 4000) g`);
      const folder = await mkdtemp(join(live().outRoot, 'bp-'));
      const copy = new BatchedCopy(client, await resolveTable(client, { schema: 'bp', table: 't' }), {
        ...batchOptions(folder, true),
        bounds: { maxRows: 1_000, maxBytes: null },
      });
      const batches: BatchFile[] = [];
      for await (const b of copy) batches.push(b);
      assert.ok(batches.length > 3 && batches.every((b) => b.rows <= 1_000));
      assert.equal(copy.authority.state, 'complete');
      assert.deepEqual(await filesDigest('bp.t', copy.files, { format: 'csv', header: false, gzip: true }), await tableDigest('SELECT * FROM bp.t'));
      await copy.endRead();
    });
  });

  describe('internal query', () => {
    it('INSERT … SELECT into an owned staging table: window = that statement, no snapshot claim', async () => {
      await seed('iq', 1_000);
      const source = await resolveTable(client, { schema: 'iq', table: 't' });
      const result = await insertSelectIntoStaging(client, source);
      const r = result.extractionReceipt!;
      assert.equal(result.artifact.rows, 1_000);
      assert.equal(r.snapshotAuthority, null);
      assert.equal(r.sourceToken, null);
      assert.deepEqual(r.evidence, [{ name: 'iq.t', rows: 1_000, bytes: null, sha256: null }], 'row evidence, no file');
      assert.ok(utcMicros(r.extractionStartedAt) <= utcMicros(r.extractionCompletedAt!));
      assert.equal(result.artifact.schema, 'pg_temp', "the session's own temporary table");
      const staged = await client.query(`SELECT count(*)::int AS n FROM pg_temp.${result.artifact.name}`);
      assert.equal(staged.rows[0].n, 1_000);
      await client.query(`DROP TABLE pg_temp.${result.artifact.name}`);
    });

    it('a failed contract check drops the staging table and keeps the primary error', async () => {
      await seed('iqf', 10);
      const source = await resolveTable(client, { schema: 'iqf', table: 't' });
      const primary = new Error('row count contract violated');
      await assert.rejects(insertSelectIntoStaging(client, source, { validate: async () => Promise.reject(primary) }), (e) => e === primary);
      const left = await client.query(`SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = pg_my_temp_schema() AND relname LIKE 'pg_extract_stg_%'`);
      assert.equal(left.rows[0].n, 0);
    });

    it('cancellation before ownership passes drops the staging table', async () => {
      await seed('iqc', 10);
      const source = await resolveTable(client, { schema: 'iqc', table: 't' });
      const controller = new AbortController();
      await assert.rejects(
        insertSelectIntoStaging(client, source, { signal: controller.signal, validate: () => new Promise<void>(() => controller.abort()) }),
        { code: ErrorCode.STAGING_CANCELLED },
      );
      const left = await client.query(`SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = pg_my_temp_schema() AND relname LIKE 'pg_extract_stg_%'`);
      assert.equal(left.rows[0].n, 0);
    });
  });
});

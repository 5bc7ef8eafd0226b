/** The target database of the loader tests: a second database on the live PostgreSQL, recreated per test. */
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { Client } from 'pg';
import { type RowsDigest, admin, digestSql, seedMixedTable, settleSessions, tableDigest } from '../support/database';
import { live } from '../support/services';
import { eventually } from '../support/eventually';

export const TARGET_DB = 'load_target';

export function targetUrl(): string {
  const url = new URL(live().pg.url);
  url.pathname = `/${TARGET_DB}`;
  return url.toString();
}

export async function onTarget<T>(work: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: targetUrl(), application_name: 'pg-extract-test' });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

/** Drops and recreates the target database, then runs `ddl` on it. */
export async function recreateTarget(ddl: string): Promise<void> {
  await admin().query(`DROP DATABASE IF EXISTS ${TARGET_DB} WITH (FORCE)`);
  await admin().query(`CREATE DATABASE ${TARGET_DB}`);
  await onTarget((c) => c.query(ddl));
}

/** The target of a table seeded by `seedMixedTable`: dst.t, of the same columns. */
export const MIXED_TARGET_DDL =
  'CREATE SCHEMA dst; CREATE TABLE dst.t (id bigint PRIMARY KEY, name text, amount numeric(12,2), created timestamptz, flag boolean, doc jsonb)';

/** dst.t's own rows (not an inheritance child's) as one digest, comparable with the source's `tableDigest`. */
export async function targetDigest(): Promise<RowsDigest> {
  return onTarget(async (c) => (await c.query(digestSql('ONLY dst.t x'))).rows[0]);
}

/** Gives dst.t an inheritance child holding one row, which no load of dst.t may touch. */
export async function addArchiveChild(): Promise<void> {
  await onTarget((c) => c.query(`CREATE TABLE dst.t_archive () INHERITS (dst.t); INSERT INTO dst.t_archive (id, name) VALUES (-2, 'archived')`));
}

/** The rows of the child {@link addArchiveChild} made. */
export async function archiveRows(): Promise<unknown[]> {
  return onTarget(async (c) => (await c.query('SELECT id::int, name FROM dst.t_archive')).rows);
}

/**
 * A suite's hooks for loading one mixed source table into dst.t: seeds `rows` rows once (the
 * returned object's `table` and `expected` are set then), gives every test an empty dst.t, and
 * after every test checks that no staging table and no session of ours is left.
 */
export function loadsMixedTable(prefix: string, rows: number): { table: string; expected: RowsDigest } {
  const source = { table: '', expected: { count: 0, md5: '' } };
  before(async () => {
    source.table = await seedMixedTable(prefix, rows);
    source.expected = await tableDigest(`SELECT * FROM ${source.table}`);
  });
  beforeEach(() => recreateTarget(MIXED_TARGET_DDL));
  afterEach(async () => {
    await admin().query(`ALTER DATABASE ${TARGET_DB} ALLOW_CONNECTIONS true`);
    assert.equal(await orphanStagingTables(), 0, 'no staging table left');
    assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
  });
  return source;
}

export async function orphanStagingTables(): Promise<number> {
  return onTarget(async (c) => (await c.query(`SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'pg_extract_stg_%'`)).rows[0].n);
}

/** Resolves with the pid of a target session of ours (`pid`, or any but `notPid`) once it runs a statement starting with `prefix`. */
export async function targetStatement(prefix: string, { pid, notPid }: { pid?: number; notPid?: number } = {}): Promise<number> {
  const running = async (): Promise<number | undefined> => {
    const r = await admin().query(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'pg-extract/target' AND state = 'active' AND query LIKE $2
          AND ($3::int IS NULL OR pid = $3) AND ($4::int IS NULL OR pid <> $4)`,
      [TARGET_DB, `${prefix}%`, pid ?? null, notPid ?? null],
    );
    return r.rows[0]?.pid;
  };
  return eventually(running, `the target ran ${prefix}`, { timeoutMs: 60_000, intervalMs: 20 });
}

/** Makes the next COMMIT on the target pause `seconds` inside a deferred trigger, so a test can act "at the moment of COMMIT". */
export async function slowCommit(seconds = 30): Promise<void> {
  await onTarget(async (c) => {
    await c.query(`CREATE SCHEMA IF NOT EXISTS pgextract`);
    await c.query(
      `CREATE TABLE IF NOT EXISTS pgextract.commit_fence (operation_id text PRIMARY KEY, intent_digest text NOT NULL, target text NOT NULL, rows bigint NOT NULL, committed_at timestamptz NOT NULL DEFAULT now())`,
    );
    await c.query(
      `CREATE OR REPLACE FUNCTION public.slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(${seconds}); RETURN NULL; END $$`,
    );
    await c.query(`DROP TRIGGER IF EXISTS slow_commit ON pgextract.commit_fence`);
    await c.query(
      `CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON pgextract.commit_fence DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.slow_commit()`,
    );
  });
}

/** Terminates the target session of ours that runs COMMIT, after `before` (if given). */
export async function terminateTargetAtCommit(before?: () => Promise<void>): Promise<void> {
  const pid = await targetStatement('COMMIT');
  await before?.();
  await admin().query('SELECT pg_terminate_backend($1)', [pid]);
}

/** The attempt of the last start of activity `type` (history records only the last attempt's start). */
export async function lastAttempt(handle: WorkflowHandle, type: string): Promise<number> {
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type);
  assert.ok(scheduled, `${type} was scheduled`);
  const started = events.find((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled.eventId));
  return started?.activityTaskStartedEventAttributes?.attempt ?? 0;
}

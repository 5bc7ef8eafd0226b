/** Test helpers on the live PostgreSQL: an admin pool, seeded tables, and our sessions in pg_stat_activity. */
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { Pool, type PoolClient } from 'pg';
import type { Manifest } from '../../src/contract/extraction-types';
import { APPLICATION_NAME } from '../../src/postgres/session';
import { live } from './services';
import { eventually } from './eventually';
import { afterLockGate } from './pg-proxy';

let pool: Pool | undefined;

export function admin(): Pool {
  if (!pool) {
    pool = new Pool({ connectionString: live().pg.url, max: 4, application_name: 'pg-extract-test' });
    pool.on('error', () => undefined);
  }
  return pool;
}

export async function closeAdmin(): Promise<void> {
  await pool?.end();
  pool = undefined;
}

/** Creates schema `schema` (dropped first) with a table `t` of `rows` rows of mixed types. */
export async function seedMixedTable(schema: string, rows: number): Promise<string> {
  await admin().query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  await admin().query(`
    CREATE TABLE ${schema}.t (
      id bigint PRIMARY KEY,
      name text,
      amount numeric(12,2),
      created timestamptz,
      flag boolean,
      doc jsonb
    )`);
  // One session: its INSERT's counts reach the statistics before ANALYZE resets them. Flushed after
  // (PostgreSQL 15 flushes up to a second later), they made the table look changed since ANALYZE, and
  // two runs a moment apart split it differently (from the histogram, then from a sample).
  const client = await admin().connect();
  try {
    await client.query(
      `INSERT INTO ${schema}.t
         SELECT g, 'name ' || g || CASE WHEN g % 7 = 0 THEN E', with "quotes", commas\\nand newline' ELSE '' END,
                (g * 1.25)::numeric(12,2), timestamptz '2026-01-01 00:00:00+00' + g * interval '1 minute',
                g % 2 = 0, jsonb_build_object('g', g)
           FROM generate_series(1, $1::int) g`,
      [rows],
    );
    if (Number((await client.query('SHOW server_version_num')).rows[0].server_version_num) >= 150000) await client.query('SELECT pg_stat_force_next_flush()');
    await client.query(`ANALYZE ${schema}.t`);
  } finally {
    client.release();
  }
  return `${schema}.t`;
}

/** Sessions this product opened that are still connected. */
export async function ourSessions(): Promise<{ pid: number; application_name: string; state: string | null }[]> {
  const r = await admin().query(`SELECT pid, application_name, state FROM pg_stat_activity WHERE application_name LIKE $1 AND pid <> pg_backend_pid()`, [
    `${APPLICATION_NAME}/%`,
  ]);
  return r.rows;
}

/** Waits (briefly) until no session of ours is left; returns what is left. */
export async function settleSessions(timeoutMs = 5000): Promise<{ pid: number; application_name: string; state: string | null }[]> {
  let left = await ourSessions();
  const settled = async (): Promise<boolean> => (left = await ourSessions()).length === 0;
  await eventually(settled, 'no session of ours left', { timeoutMs, intervalMs: 100 }).catch(() => undefined);
  return left;
}

/** Rows as one comparable value: how many, and the md5 of their text in order. */
export type RowsDigest = { count: number; md5: string };

/** count + md5 over the rows of `from` (a relation or a parenthesized query aliased x), in text order. */
export function digestSql(from: string): string {
  return `SELECT count(*)::int AS count, coalesce(md5(string_agg(x::text, '|' ORDER BY x::text)), '') AS md5 FROM ${from}`;
}

/** {@link digestSql} of `query`, computed inside `snapshotId` when given. */
export async function tableDigest(query: string, snapshotId?: string): Promise<RowsDigest> {
  const client = await admin().connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    if (snapshotId) await client.query(`SET TRANSACTION SNAPSHOT '${snapshotId}'`);
    const r = await client.query(digestSql(`(${query}) x`));
    await client.query('COMMIT');
    return r.rows[0];
  } finally {
    client.release();
  }
}

/** A zstd file's bytes as the zstd tool itself decompresses them: a decoder independent of the one under test. */
export function zstdDecompressed(file: string): Readable {
  const child = spawn('zstd', ['-dc', file], { stdio: ['ignore', 'pipe', 'inherit'] });
  child.once('exit', (code) => code !== 0 && child.stdout.destroy(new Error(`zstd -dc ${file} exited with ${code}`)));
  return child.stdout;
}

/**
 * Loads exported CSV/binary files into a scratch copy of `table` and digests it the same way as
 * {@link tableDigest}, so "the files hold exactly the snapshot's rows" is one comparison.
 */
export async function filesDigest(
  table: string,
  files: string[],
  format: { format: 'csv' | 'binary'; header: boolean; gzip?: boolean; compression?: 'zstd' } = { format: 'csv', header: true },
): Promise<RowsDigest> {
  const { createReadStream } = await import('node:fs');
  const { pipeline } = await import('node:stream/promises');
  const { createGunzip } = await import('node:zlib');
  const { from } = await import('pg-copy-streams');
  const client = await admin().connect();
  try {
    await client.query(`CREATE TEMP TABLE scratch (LIKE ${table}) ON COMMIT PRESERVE ROWS`);
    const options = format.format === 'binary' ? 'FORMAT binary' : `FORMAT csv, HEADER ${format.header}`;
    for (const file of files) {
      const sink = client.query(from(`COPY scratch FROM STDIN (${options})`));
      if (format.compression === 'zstd') await pipeline(zstdDecompressed(file), sink);
      else await (format.gzip ? pipeline(createReadStream(file), createGunzip(), sink) : pipeline(createReadStream(file), sink));
    }
    const r = await client.query(digestSql('scratch x'));
    return r.rows[0];
  } finally {
    await client.query('DROP TABLE IF EXISTS scratch').catch(() => undefined);
    client.release();
  }
}

/** {@link filesDigest} of every file a manifest lists. */
export async function manifestDigest(table: string, manifest: Pick<Manifest, 'files'>, format?: Parameters<typeof filesDigest>[2]): Promise<RowsDigest> {
  return filesDigest(
    table,
    manifest.files.map((f) => f.path),
    format,
  );
}

/** A collation whose order is not byte order (ICU or libc English), quoted for SQL. */
export async function nonBytewiseCollation(): Promise<string> {
  const names = ['en-x-icu', 'und-x-icu', 'en_US.utf8', 'en_US'];
  const r = await admin().query<{ name: string }>(
    `SELECT collname AS name FROM pg_collation WHERE collname = ANY($1) AND collencoding IN (-1, pg_char_to_encoding('UTF8')) ORDER BY array_position($1, collname) LIMIT 1`,
    [names],
  );
  const name = r.rows[0]?.name;
  if (!name) throw new Error(`this server has none of the collations ${names.join(', ')} (ICU or an English libc locale) the text-key test needs`);
  return `"${name}"`;
}

/**
 * A migration that asks for its lock after the run's: waits until a coordinator of ours holds its
 * ACCESS SHARE on `table`, then asks for ACCESS EXCLUSIVE on `session` inside a transaction, which
 * queues behind the coordinator's lock (and every later ACCESS SHARE behind it). Resolves once it
 * waits, with its pid and the promise of its LOCK (the caller rolls `session` back).
 */
export async function lockAfterCoordinator(session: PoolClient, table: string): Promise<{ pid: number; locked: Promise<unknown> }> {
  const ours = async (): Promise<boolean> =>
    (
      await admin().query(
        `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1 AND l.granted AND l.relation = $2::regclass`,
        [`${APPLICATION_NAME}/coordinator`, table],
      )
    ).rowCount! > 0;
  await eventually(ours, 'a coordinator of ours holds its lock', { intervalMs: 10 });
  const pid = (await session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const locked = session.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  locked.catch(() => undefined);
  const waits = async (): Promise<boolean> =>
    (await admin().query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [pid])).rowCount! > 0;
  await eventually(waits, 'the migration waits for the lock');
  return { pid, locked };
}

/**
 * Runs `work` with a session for a migration ({@link lockAfterCoordinator}) and a source URL whose
 * new sessions are held back, once one has asked for its ACCESS SHARE, until `open()`: a run's
 * partitions or ranges then connect only after the migration queued. The migration is rolled
 * back and the gate closed afterwards.
 */
export async function withMigrationGate(work: (gated: { sourceUrl: string; migration: PoolClient; open: () => void }) => Promise<void>): Promise<void> {
  const sourceUrl = new URL(live().pg.url);
  const gate = await afterLockGate(Number(sourceUrl.port));
  sourceUrl.hostname = '127.0.0.1';
  sourceUrl.port = String(gate.port);
  const migration = await admin().connect();
  try {
    await work({ sourceUrl: sourceUrl.toString(), migration, open: () => gate.open() });
  } finally {
    await migration.query('ROLLBACK').catch(() => undefined);
    migration.release();
    await gate.close();
  }
}

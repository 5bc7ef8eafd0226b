/**
 * Table locks of an export. The coordinator takes ACCESS SHARE right after exporting its snapshot
 * (as pg_dump does), so TRUNCATE, a rewriting ALTER TABLE or VACUUM FULL cannot run under the
 * export, and then checks that none committed between the snapshot and the lock (pg_dump does
 * not; see snapshot-changes.ts). The coordinator and partitions wait at most `lock_timeout` for a
 * lock: a migration queued behind the coordinator's lock would otherwise queue every partition
 * (and the application) behind itself, a wait no deadlock detector sees. lock-blockers.ts turns a
 * timeout into LOCK_TIMEOUT naming who held the lock.
 */
import type { ClientBase, QueryResult } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import { fromItem } from './catalog';
import { changedSinceSnapshot, requireUnchanged } from './snapshot-changes';
import { quoteQualified } from './sql';

/** lock_timeout for the rest of the current transaction. */
export async function setLockTimeout(client: ClientBase, ms: number): Promise<void> {
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `lock timeout must be a positive integer of ms, got ${ms}`, { field: 'timeouts.lockTimeoutMs' });
  await client.query(`SET LOCAL lock_timeout = ${ms}`);
}

/** LOCK TABLE refuses materialized views and foreign tables; planning a SELECT takes the same lock on them. */
const LOCK_TABLE_KINDS = new Set(['r', 'p', 'v']);

/** A relation as a lock names it. */
export interface LockableTable {
  schema: string;
  table: string;
  relkind: string;
}

/**
 * ACCESS SHARE on the tables a one-session read (whole copy, batched copy) is about to read, taken
 * after BEGIN and before its snapshot (LOCK takes none): no change can then commit between the
 * snapshot and the lock, the race {@link lockAccessShare} checks for where the tables are known only
 * inside the snapshot. Materialized views and foreign tables cannot be LOCKed; their COPY locks them.
 */
export async function lockBeforeSnapshot(client: ClientBase, tables: readonly LockableTable[]): Promise<void> {
  const lock = lockTableSql(tables);
  if (lock) await client.query(lock);
}

/** `LOCK TABLE a, b, … IN ACCESS SHARE MODE` for the relations LOCK TABLE takes; null when there are none. */
function lockTableSql(tables: readonly LockableTable[]): string | null {
  const lockable = tables.filter((t) => LOCK_TABLE_KINDS.has(t.relkind)).map(fromItem);
  return lockable.length ? `LOCK TABLE ${lockable.join(', ')} IN ACCESS SHARE MODE` : null;
}

/**
 * SQLSTATEs of a lock on a name that no longer leads where the snapshot's catalog said: no such
 * relation (42P01), no such schema (3F000), a relation of another kind now (42809).
 */
const GONE_SINCE = new Set(['42P01', '3F000', '42809']);

/**
 * ACCESS SHARE on each relation (and its partitions, or a view's tables) until the transaction
 * ends; a table's inheritance children are not read (catalog.ts fromItem), so not locked either.
 * Two round trips for all of them, where pg_dump takes one per table: a set of 2,000 tables on a
 * server 1 ms away waits two round trips, not 2,000 (about 2 s). The first reads the snapshot's
 * column names; the second, one simple-query message, is `LOCK TABLE a, b, … IN ACCESS SHARE MODE`
 * for tables and views, a `SELECT … LIMIT 0` for each other relation (planning it locks a
 * materialized view, which LOCK TABLE refuses), and each table's row type, its columns as the
 * catalog has them now. The first lock not granted within lock_timeout fails it; the caller's
 * ROLLBACK releases the locks already taken.
 *
 * The tables were found in the snapshot, but a lock takes the name as it is now. A change committed
 * in between can leave the snapshot unable to read the table as it saw it: gone (dropped, renamed:
 * an ETL's scratch table), replaced (a swap of names), emptied or rewritten (TRUNCATE, a rewriting
 * ALTER TABLE, REFRESH MATERIALIZED VIEW are not MVCC-safe: the snapshot would read the new file,
 * empty after a TRUNCATE and reload), or a column renamed or dropped (read by name, a swap of two
 * names would read each under the other's, and one dropped and added again would read the new, empty column). Each is SNAPSHOT_LOST, and a fresh attempt plans the set
 * as it is then (a listed table that is gone then fails with TABLE_NOT_FOUND).
 */
export async function lockAccessShare(client: ClientBase, tables: readonly LockableTable[]): Promise<void> {
  if (!tables.length) return;
  const before = await snapshotColumns(client, tables);
  const lock = lockTableSql(tables);
  // Each table's last column as the snapshot saw it: with the names still in their order (checked below), columns
  // dropped and added again under their names are the last ones, so the last is among them.
  const lasts = before.flatMap((t, i) => (t.lastAttnum === null ? [] : [{ oid: t.oid, attnum: t.lastAttnum, i }]));
  const statements = [
    ...(lock ? [lock] : []),
    ...tables.filter((t) => !LOCK_TABLE_KINDS.has(t.relkind)).map((t) => `SELECT FROM ${fromItem(t)} LIMIT 0`),
    // Each table's row type expanded: its columns as the catalog has them now, as a statement's parse reads them (not
    // as the snapshot saw them). No relation is scanned, so no index is locked, and no value is made.
    ...tables.map((t) => `SELECT (NULL::${quoteQualified(t.schema, t.table)}).* LIMIT 0`),
    // The tables whose last column the snapshot saw is dropped now (has_column_privilege reads the catalog as it is,
    // and says NULL of a dropped column): one dropped and added again under its name, which the names alone pass,
    // would be read as the new column, NULL or its default in every row.
    `SELECT c.i FROM unnest('{${lasts.map((c) => c.oid).join(',')}}'::pg_catalog.oid[], '{${lasts.map((c) => c.attnum).join(',')}}'::pg_catalog.int2[],
       '{${lasts.map((c) => c.i).join(',')}}'::pg_catalog.int4[]) AS c(oid, attnum, i)
      WHERE pg_catalog.has_column_privilege(c.oid, c.attnum, 'SELECT') IS NULL`,
  ];
  let replies: QueryResult[];
  try {
    const replied = await client.query(statements.join(';\n'));
    replies = Array.isArray(replied) ? replied : [replied];
  } catch (err) {
    if (!GONE_SINCE.has(String((err as { code?: unknown }).code))) throw err;
    throw new PgExtractError(ErrorCode.SNAPSHOT_LOST, `a table went away after the snapshot was taken, before it was locked (${(err as Error).message})`, {
      cause: err,
    });
  }
  const dropped = new Set(replies.at(-1)!.rows.map((row: { i: number }) => row.i));
  const now = replies.slice(-tables.length - 1, -1).map((reply) => reply.fields.map((f) => f.name));
  // Columns added since come after the snapshot's: those must still be there, in their order, under their names.
  const renamed = tables.filter((_, i) => dropped.has(i) || before[i]!.names.some((name, n) => now[i]![n] !== name));
  if (renamed.length) {
    throw changedSinceSnapshot(
      renamed.map((t) => `${t.schema}.${t.table}`),
      'before it was locked (a column renamed or dropped): the snapshot would read its columns by their names now',
    );
  }
  await requireUnchanged(client, tables, 'before it was locked (replaced, emptied, rewritten, or a partition attached or detached)');
}

/** Each table's oid, its columns' names in column order and its last column's number, as the snapshot's catalog has them. */
async function snapshotColumns(client: ClientBase, tables: readonly LockableTable[]): Promise<{ oid: number; names: string[]; lastAttnum: number | null }[]> {
  const r = await client.query<{ oid: string | null; names: string[] | null; last: number | null }>(
    `SELECT c.oid::pg_catalog.text AS oid, a.names, a.last
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(schema, rel, i)
       LEFT JOIN (pg_catalog.pg_namespace n JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid) ON n.nspname = t.schema AND c.relname = t.rel
       LEFT JOIN LATERAL (SELECT pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY a.attnum) AS names, pg_catalog.max(a.attnum)::pg_catalog.int4 AS last
                            FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) a ON true
      ORDER BY t.i`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  return r.rows.map((row) => ({ oid: Number(row.oid), names: row.names ?? [], lastAttnum: row.last }));
}

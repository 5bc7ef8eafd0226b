/**
 * Table locks of an export. The coordinator takes ACCESS SHARE right after exporting its snapshot
 * (as pg_dump does), so TRUNCATE, a rewriting ALTER TABLE or VACUUM FULL cannot run under the
 * export. The coordinator and partitions wait at most `lock_timeout` for a lock: a migration
 * queued behind the coordinator's lock would otherwise queue every partition (and the
 * application) behind itself, a wait no deadlock detector sees. A timeout becomes LOCK_TIMEOUT
 * naming who held or queued for the conflicting lock, read from pg_locks after the wait ended
 * (pg_blocking_pids only answers for a backend that is still waiting).
 */
import type { ClientBase } from 'pg';
import { ErrorCode, PgExtractError, addNote } from '../errors';
import { fromItem } from './catalog';
import { quoteQualified } from './sql';

/** lock_timeout for the rest of the current transaction. */
export async function setLockTimeout(client: ClientBase, ms: number): Promise<void> {
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `lock timeout must be a positive integer of ms, got ${ms}`, { field: 'timeouts.lockTimeoutMs' });
  await client.query(`SET LOCAL lock_timeout = ${ms}`);
}

/** LOCK TABLE refuses materialized views and foreign tables; planning a SELECT takes the same lock on them. */
const LOCK_TABLE_KINDS = new Set(['r', 'p', 'v']);

/** The statement that takes ACCESS SHARE on `table` until the transaction ends. */
function accessShareStatement(table: { schema: string; table: string; relkind: string }): string {
  const relation = fromItem(table);
  return LOCK_TABLE_KINDS.has(table.relkind) ? `LOCK TABLE ${relation} IN ACCESS SHARE MODE` : `SELECT FROM ${relation} LIMIT 0`;
}

/**
 * ACCESS SHARE on each relation (and its partitions, or a view's tables) until the transaction
 * ends, in the order given; a table's inheritance children are not read (catalog.ts fromItem), so
 * not locked either. One round trip for all of them (a simple-query message of one statement per
 * table): a set of 2,000 tables on a server 1 ms away waits 1 ms here, not 2 s. The first lock not
 * granted within lock_timeout ends the message, and the transaction's failure releases the others.
 */
export async function lockAccessShare(client: ClientBase, tables: readonly { schema: string; table: string; relkind: string }[]): Promise<void> {
  if (tables.length > 0) await client.query(tables.map(accessShareStatement).join(';\n'));
}

interface Blocker {
  pid: number | null;
  mode: string;
  granted: boolean;
  application_name: string | null;
  state: string | null;
  query: string | null;
}

/**
 * `err` unchanged, or LOCK_TIMEOUT when it is a lock timeout (SQLSTATE 55P03), naming who holds or
 * waits for a conflicting lock on any of `tables` (the ones the failed statement was locking). Call
 * it after the failed transaction was rolled back: it reads pg_locks on `client`.
 */
export async function lockTimeoutError(
  client: ClientBase,
  err: unknown,
  tables: readonly { schema: string; table: string }[],
  timeoutMs: number,
): Promise<unknown> {
  if ((err as { code?: unknown })?.code !== '55P03') return err;
  const relations = tables.map((t) => quoteQualified(t.schema, t.table));
  const many = relations.length > 1;
  let blockers: string;
  try {
    const found = await conflictingLocks(client, relations);
    blockers = found.length ? found.map((b) => (many ? `${b.relation}: ` : '') + describe(b)).join('; ') : 'no conflicting lock is left (its holder let go)';
  } catch (readErr) {
    blockers = 'the blocker could not be read';
    addNote(err, `reading pg_locks failed: ${(readErr as Error).message}`);
  }
  const what = many ? `one of ${relations.length} tables (${relations.slice(0, 3).join(', ')}${relations.length > 3 ? ', …' : ''})` : relations[0];
  return new PgExtractError(ErrorCode.LOCK_TIMEOUT, `could not get ACCESS SHARE on ${what} within ${timeoutMs} ms: ${blockers}`, { cause: err });
}

/** Other backends' ACCESS EXCLUSIVE (the one mode that conflicts with ACCESS SHARE) on the relations or their partitions, held or queued. */
async function conflictingLocks(client: ClientBase, relations: readonly string[]): Promise<(Blocker & { relation: string })[]> {
  const r = await client.query<Blocker & { relation: string }>(
    `SELECT l.relation::regclass::text AS relation, l.pid, l.mode, l.granted, a.application_name, a.state, left(a.query, 1000) AS query
       FROM pg_catalog.pg_locks l
       LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock' AND l.pid IS DISTINCT FROM pg_backend_pid()
        AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
        AND l.relation IN (SELECT t.name::regclass FROM unnest($1::text[]) AS t(name)
                           UNION SELECT p.relid FROM unnest($1::text[]) AS t(name), pg_catalog.pg_partition_tree(t.name::regclass) p)
      ORDER BY l.granted DESC, l.pid
      LIMIT 5`,
    [relations],
  );
  return r.rows;
}

function describe(b: Blocker): string {
  const who =
    b.pid === null ? 'a prepared transaction' : `pid ${b.pid} (application_name ${JSON.stringify(b.application_name ?? '')}, ${b.state ?? 'state unknown'})`;
  const query = b.query === null ? '' : `, query ${JSON.stringify(maskQuery(b.query))}`;
  return `${who} ${b.granted ? 'holds' : 'waits for'} ${b.mode}${query}`;
}

/** A query text fit for an error message: string literals masked (they may hold secrets), whitespace folded, at most 120 characters. */
export function maskQuery(query: string): string {
  const masked = query
    .replace(/\$([A-Za-z_][A-Za-z0-9_]*)?\$[\s\S]*?(?:\$\1\$|$)/g, "'…'")
    .replace(/'(?:[^']|'')*(?:'|$)/g, "'…'")
    .replace(/\s+/g, ' ')
    .trim();
  return masked.length > 120 ? `${masked.slice(0, 119)}…` : masked;
}

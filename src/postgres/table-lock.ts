/**
 * Table locks of an export. The coordinator takes ACCESS SHARE right after exporting its snapshot
 * (as pg_dump does), so TRUNCATE, a rewriting ALTER TABLE or VACUUM FULL cannot run under the
 * export, and then checks that none committed between the snapshot and the lock (pg_dump does
 * not). The coordinator and partitions wait at most `lock_timeout` for a lock: a migration queued
 * behind the coordinator's lock would otherwise queue every partition (and the application)
 * behind itself, a wait no deadlock detector sees. A timeout becomes LOCK_TIMEOUT naming who held
 * or queued for the conflicting lock, read from pg_locks after the wait ended (pg_blocking_pids
 * only answers for a backend that is still waiting).
 */
import type { ClientBase, QueryResult } from 'pg';
import { ErrorCode, PgExtractError, addNote } from '../errors';
import { VIEW_READS, fromItem } from './catalog';
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
 * The relations LOCK TABLE locks along with one it names (parent → child): a partitioned table's
 * partitions (one a `DETACH … CONCURRENTLY` left pending too), and the relations a view reads (not
 * a materialized view's: its query is not run when it is read, and LOCK TABLE does not take it).
 */
const LOCKED_WITH = `
  SELECT i.inhparent AS parent, i.inhrelid AS child
    FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class p ON p.oid = i.inhparent
   WHERE p.relkind = 'p'
  UNION ALL${VIEW_READS}`;

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

/** {@link requireUnchanged}'s `when` once the tables are read: locked, only their partitions can have changed. */
export const WHILE_READ = 'while it was read (a partition attached)';

/** lock_timeout's SQLSTATE. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * SNAPSHOT_LOST naming the tables that changed since the snapshot (see {@link changedSince}) `when`;
 * `partitions: false` leaves their partitions uncompared. Once they are locked, only their
 * partitions can change: ATTACH PARTITION does not wait for ACCESS SHARE, and a read of a
 * partitioned table takes the partitions it has when the read starts, not the snapshot's, so one
 * attached while the export ran may have been read.
 */
export async function requireUnchanged(
  client: ClientBase,
  tables: readonly { schema: string; table: string }[],
  when: string,
  { partitions = true }: { partitions?: boolean } = {},
): Promise<void> {
  const changed = await changedSince(client, tables, partitions).catch((err: unknown) => {
    // pg_partition_tree() locks each partition; the locked ones are ours already, so a lock it waited for
    // (within the caller's lock_timeout) is on a partition attached since.
    if ((err as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw err;
    return [`a partition of ${listed(tables.map((t) => `${t.schema}.${t.table}`))} (a lock on it not granted: ${(err as Error).message})`];
  });
  if (changed.length) throw changedSinceSnapshot(changed, when);
}

/** SNAPSHOT_LOST naming the relations that changed after the snapshot was taken, and `when`. */
function changedSinceSnapshot(changed: readonly string[], when: string): PgExtractError {
  return new PgExtractError(ErrorCode.SNAPSHOT_LOST, `${listed(changed)} changed after the snapshot was taken, ${when}: the snapshot reads what is there now`);
}

/**
 * A query's CTE `tree(root, oid)`: each partitioned relation of its CTE `rel` with its partitions at
 * every depth, as the snapshot's catalog has them (not one it sees a DETACH CONCURRENTLY left pending
 * on: reads leave those out).
 */
const PARTITION_TREES = `tree(root, oid) AS (
       SELECT rel.oid, rel.oid FROM rel JOIN pg_catalog.pg_class c ON c.oid = rel.oid AND c.relkind = 'p'
       UNION
       SELECT tree.root, i.inhrelid FROM tree JOIN pg_catalog.pg_inherits i ON i.inhparent = tree.oid AND NOT i.inhdetachpending)`;

/**
 * changedSince's partitioned tables whose partitions differ: each one reached (a named one, a view's, a
 * sub-partitioned one's) in the snapshot's catalog against pg_partition_tree(), which reads them as they
 * are now (the lock took those): a partition attached or detached in between would be read, or not, by
 * the snapshot. pg_partition_tree() locks each partition (a new one too, within lock_timeout).
 */
const PARTITIONS_CHANGED = `
     SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
       FROM (SELECT DISTINCT root FROM tree) r
       JOIN pg_catalog.pg_class c ON c.oid = r.root JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE (SELECT array_agg(t.oid ORDER BY t.oid) FROM tree t WHERE t.root = r.root)
            IS DISTINCT FROM (SELECT array_agg(x.relid::oid ORDER BY x.relid::oid) FROM pg_catalog.pg_partition_tree(r.root) x)
     UNION`;

/**
 * The tables whose name now leads to another relation than in the snapshot's catalog, the
 * partitioned tables whose partitions are not the snapshot's catalog's (with `partitions`: see
 * {@link PARTITIONS_CHANGED}), and the locked tables (with the partitions and a view's relations
 * LOCK TABLE locks with them) whose file is not the one the snapshot's catalog names: `pg_class`
 * read in the snapshot, against `to_regclass()` and
 * `pg_relation_filenode()`, which read the catalog as it is now (taken in with the lock). VACUUM
 * FULL, CLUSTER and SET TABLESPACE also give a table a new file, though the snapshot could still
 * read it: for them the fresh attempt is one more than needed.
 */
async function changedSince(client: ClientBase, tables: readonly { schema: string; table: string }[], partitions: boolean): Promise<string[]> {
  const r = await client.query<{ label: string }>(
    `WITH RECURSIVE named AS (
       SELECT pg_catalog.format('%I.%I', t.schema, t.rel) AS label,
              (SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = t.schema AND c.relname = t.rel) AS seen,
              pg_catalog.to_regclass(t.name)::oid AS now
         FROM unnest($1::text[], $2::text[], $3::text[]) AS t(schema, rel, name)),
     rel(oid) AS (
       SELECT seen FROM named WHERE seen = now
       UNION
       SELECT e.child FROM rel JOIN (${LOCKED_WITH}) e ON e.parent = rel.oid),
     ${PARTITION_TREES}
     SELECT label FROM named WHERE seen IS DISTINCT FROM now
     UNION${partitions ? PARTITIONS_CHANGED : ''}
     SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
       FROM rel JOIN pg_catalog.pg_class c ON c.oid = rel.oid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      -- relfilenode 0: a mapped system catalog (pg_class and a few others), whose file the catalog does not name.
      WHERE c.relkind IN ('r', 'm') AND c.relfilenode <> 0 AND c.relfilenode IS DISTINCT FROM pg_catalog.pg_relation_filenode(c.oid)
      ORDER BY 1`,
    [tables.map((t) => t.schema), tables.map((t) => t.table), tables.map((t) => quoteQualified(t.schema, t.table))],
  );
  return r.rows.map((row) => row.label);
}

/**
 * SNAPSHOT_LOST when this session's reads of `table` (a one-session copy's, in its transaction) took
 * a partition its snapshot's catalog does not have under the table: an ATTACH PARTITION committed
 * after the snapshot (it does not wait for ACCESS SHARE) and before a read was planned. A read takes
 * the partitions it has when it is planned and locks each until the transaction ends, so this
 * session's locks (pg_locks) are the partitions it read; `pg_partition_ancestors()` places them as
 * the catalog is now, without a lock. A partition attached after the last read was not read.
 */
async function requireReadPartitionsUnchanged(client: ClientBase, table: { schema: string; table: string }): Promise<void> {
  const r = await client.query<{ label: string }>(
    `WITH RECURSIVE rel(oid) AS (
       SELECT pg_catalog.to_regclass($1)::oid
       UNION
       SELECT e.child FROM rel JOIN (${LOCKED_WITH}) e ON e.parent = rel.oid),
     ${PARTITION_TREES}
     SELECT DISTINCT pg_catalog.format('%I.%I', n.nspname, c.relname) AS label
       FROM pg_catalog.pg_locks l
       CROSS JOIN LATERAL pg_catalog.pg_partition_ancestors(l.relation) AS a(ancestor)
       JOIN (SELECT DISTINCT root FROM tree) t ON t.root = a.ancestor
       JOIN pg_catalog.pg_class c ON c.oid = t.root JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE l.pid = pg_catalog.pg_backend_pid() AND l.locktype = 'relation'
        AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
        AND NOT EXISTS (SELECT 1 FROM tree x WHERE x.root = t.root AND x.oid = l.relation)
        -- One the snapshot sees a DETACH CONCURRENTLY left pending on: locked with its parent, never read.
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhrelid = l.relation AND i.inhdetachpending)
      ORDER BY 1`,
    [quoteQualified(table.schema, table.table)],
  );
  if (r.rows.length)
    throw changedSinceSnapshot(
      r.rows.map((row) => row.label),
      WHILE_READ,
    );
}

/**
 * SNAPSHOT_LOST unless a one-session copy (locked before its snapshot: see {@link lockBeforeSnapshot})
 * read `table` as its snapshot saw it: no materialized view (which LOCK TABLE refuses, so its COPY
 * locked it) refreshed in between, and no partition attached before a read took it (ATTACH does not
 * wait for ACCESS SHARE).
 */
export async function readAsSnapshotSaw(client: ClientBase, table: { schema: string; table: string }): Promise<void> {
  await requireUnchanged(client, [table], 'before it was read', { partitions: false });
  await requireReadPartitionsUnchanged(client, table);
}

/** A backend holding or queued for a conflicting lock, and the relations it is on. */
interface Blocker {
  pid: number | null;
  mode: string;
  granted: boolean;
  application_name: string | null;
  state: string | null;
  query: string | null;
  relations: string[];
}

/** Blockers named in a message, and relations named per blocker. */
const SHOWN = 5;

/**
 * `err` unchanged, or LOCK_TIMEOUT when it is a lock timeout (SQLSTATE 55P03), naming who holds or
 * waits for a conflicting lock on `tables` (the ones the failed statement was locking), their
 * partitions or a view's tables. Call it after the failed transaction was rolled back: it reads
 * pg_locks on `client`, without taking a lock on any of them.
 */
export async function lockTimeoutError(
  client: ClientBase,
  err: unknown,
  tables: readonly { schema: string; table: string }[],
  timeoutMs: number,
): Promise<unknown> {
  if ((err as { code?: unknown })?.code !== LOCK_NOT_AVAILABLE) return err;
  const relations = tables.map((t) => quoteQualified(t.schema, t.table));
  let blockers: string;
  try {
    const found = await conflictingLocks(client, relations);
    // One table's blocker on that very table reads as before; anything else says where.
    const where = (b: Blocker) => (relations.length === 1 && b.relations.length === 1 && b.relations[0] === relations[0] ? '' : ` on ${listed(b.relations)}`);
    blockers = found.length
      ? found
          .slice(0, SHOWN)
          .map((b) => describe(b, where(b)))
          .join('; ')
      : 'no conflicting lock is left (its holder let go)';
  } catch (readErr) {
    blockers = 'the blocker could not be read';
    addNote(err, `reading pg_locks failed: ${(readErr as Error).message}`);
  }
  const what = relations.length === 1 ? relations[0] : relations.length ? `one of ${relations.length} tables (${listed(relations)})` : 'a table';
  return new PgExtractError(ErrorCode.LOCK_TIMEOUT, `could not get ACCESS SHARE on ${what} within ${timeoutMs} ms: ${blockers}`, { cause: err });
}

function listed(names: readonly string[]): string {
  return names.length > SHOWN ? `${names.slice(0, SHOWN).join(', ')}, … ${names.length - SHOWN} more` : names.join(', ');
}

/**
 * Other backends' ACCESS EXCLUSIVE (the one mode that conflicts with ACCESS SHARE), held or queued,
 * on the relations, their partitions or the relations a view reads (what LOCK TABLE locks with
 * them), one entry per backend. Read from the catalogs alone: pg_partition_tree() would take
 * ACCESS SHARE on the partitions, and wait, without a lock_timeout now, behind the blocker itself.
 * A name that no longer resolves (dropped or renamed since) is left out.
 */
async function conflictingLocks(client: ClientBase, relations: readonly string[]): Promise<Blocker[]> {
  const r = await client.query<Omit<Blocker, 'relations'> & { schema: string; name: string }>(
    `WITH RECURSIVE locked(oid) AS (
       SELECT to_regclass(t.name)::oid FROM unnest($1::text[]) AS t(name) WHERE to_regclass(t.name) IS NOT NULL
       UNION
       SELECT e.child FROM locked JOIN (${LOCKED_WITH}) e ON e.parent = locked.oid)
     SELECT n.nspname AS schema, c.relname AS name, l.pid, l.mode, l.granted, a.application_name, a.state, left(a.query, 1000) AS query
       FROM pg_catalog.pg_locks l
       JOIN pg_catalog.pg_class c ON c.oid = l.relation
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock' AND l.pid IS DISTINCT FROM pg_backend_pid()
        AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
        AND l.relation IN (SELECT oid FROM locked)
      ORDER BY l.granted DESC, l.pid, n.nspname, c.relname
      LIMIT 1000`,
    [relations],
  );
  const byBackend = new Map<string, Blocker>();
  for (const { schema, name, ...lock } of r.rows) {
    const key = `${lock.pid}/${lock.granted}`;
    const blocker = byBackend.get(key) ?? { ...lock, relations: [] };
    blocker.relations.push(quoteQualified(schema, name));
    byBackend.set(key, blocker);
  }
  return [...byBackend.values()];
}

function describe(b: Blocker, where: string): string {
  const who =
    b.pid === null ? 'a prepared transaction' : `pid ${b.pid} (application_name ${JSON.stringify(b.application_name ?? '')}, ${b.state ?? 'state unknown'})`;
  const query = b.query === null ? '' : `, query ${JSON.stringify(maskQuery(b.query))}`;
  return `${who} ${b.granted ? 'holds' : 'waits for'} ${b.mode}${where}${query}`;
}

/** Where a string literal or a comment begins: a quote (E'', U&'', B'' too), a dollar quote, `--` or `/*`. */
const LITERAL_OR_COMMENT = /'|\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$|--|\/\*/y;

/**
 * A query text fit for an error message: cut at its first string literal or comment (they may hold secrets), whitespace
 * folded, at most 120 characters. Cut, not masked literal by literal: whether a backslash escapes a quote depends on the
 * other session's standard_conforming_strings, and a quote inside a comment pairs with nothing, so a masker that guesses
 * wrong shows the literal after it. Double-quoted identifiers are read whole (a quote in one is no literal).
 */
export function maskQuery(query: string): string {
  let kept = '';
  for (let at = 0; at < query.length;) {
    if (query[at] === '"') {
      const end = /"(?:[^"]|"")*(?:"|$)/y;
      end.lastIndex = at;
      const identifier = end.exec(query)![0];
      kept += identifier;
      at += identifier.length;
      continue;
    }
    LITERAL_OR_COMMENT.lastIndex = at;
    if (LITERAL_OR_COMMENT.test(query)) {
      kept += '…';
      break;
    }
    kept += query[at++];
  }
  const folded = kept.replace(/\s+/g, ' ').trim();
  return folded.length > 120 ? `${folded.slice(0, 119)}…` : folded;
}

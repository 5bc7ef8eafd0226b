/**
 * Whether tables changed after the snapshot was taken, before their lock or while they were read:
 * a name that now leads to another relation, a table given a new file (TRUNCATE, a rewriting ALTER
 * TABLE, REFRESH MATERIALIZED VIEW are not MVCC-safe), or partitions attached or detached. Each is
 * SNAPSHOT_LOST: the snapshot would read what is there now, not what it saw.
 */
import type { ClientBase } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import { LOCKED_WITH, LOCK_NOT_AVAILABLE, listed } from './lock-scope';
import { quoteQualified } from './sql';

/** {@link requireUnchanged}'s `when` once the tables are read: locked, only their partitions can have changed. */
export const WHILE_READ = 'while it was read (a partition attached)';

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
export function changedSinceSnapshot(changed: readonly string[], when: string): PgExtractError {
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
 * SNAPSHOT_LOST unless a one-session copy (locked before its snapshot: see table-lock.ts lockBeforeSnapshot)
 * read `table` as its snapshot saw it: no materialized view (which LOCK TABLE refuses, so its COPY
 * locked it) refreshed in between, and no partition attached before a read took it (ATTACH does not
 * wait for ACCESS SHARE).
 */
export async function readAsSnapshotSaw(client: ClientBase, table: { schema: string; table: string }): Promise<void> {
  await requireUnchanged(client, [table], 'before it was read', { partitions: false });
  await requireReadPartitionsUnchanged(client, table);
}

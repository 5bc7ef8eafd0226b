/**
 * What a one-table `replace` may not do to other tables. It empties its target with a DELETE, and a
 * DELETE runs the ON DELETE action of every foreign key that references the rows: CASCADE deletes
 * the referencing rows of other tables, SET NULL and SET DEFAULT change them, at once (an action is
 * never deferred) and for good, since the load then fills its own table only. No load asked for
 * that; pg_restore --data-only deletes nothing, and TRUNCATE (a set's replace, pgcopydb) refuses
 * any referencing key. So such a key refuses the replace before its DELETE. A NO ACTION or
 * RESTRICT key changes nothing: it fails the load (23503, naming both tables) unless the loaded
 * rows hold the keys it needs (deferrable: checked at COMMIT).
 */
import type { Client } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import { formatTableName } from '../contract/identifiers';
import { quoteQualified } from '../postgres/sql';

const ACTIONS: Record<string, string> = { c: 'CASCADE', n: 'SET NULL', d: 'SET DEFAULT' };

/**
 * Throws TARGET_REPLACE_CASCADES naming each table outside `target` (its partitions are inside it)
 * whose foreign key would delete or change its rows when `target`'s rows are deleted. Run behind
 * the replace's SHARE ROW EXCLUSIVE lock, which a new foreign key on `target` waits for.
 */
export async function refuseCascadingReplace(client: Client, target: { schema: string; table: string }): Promise<void> {
  const r = await client.query<{ referencing_schema: string; referencing_table: string; name: string; action: string }>(
    `WITH RECURSIVE tree AS (SELECT $1::regclass AS relid UNION SELECT relid FROM pg_catalog.pg_partition_tree($1::regclass)),
     acting AS (
       SELECT k.oid, k.conparentid FROM pg_catalog.pg_constraint k
        WHERE k.contype = 'f' AND k.confdeltype IN ('c', 'n', 'd')
          AND k.confrelid IN (SELECT relid FROM tree) AND k.conrelid NOT IN (SELECT relid FROM tree)),
     -- A key on or to a partitioned table has a copy per partition: each is named by the key it was copied from.
     root(oid, parentid) AS (SELECT oid, conparentid FROM acting
       UNION SELECT k.oid, k.conparentid FROM root JOIN pg_catalog.pg_constraint k ON k.oid = root.parentid)
     SELECT DISTINCT n.nspname AS referencing_schema, c.relname AS referencing_table, k.conname AS name, k.confdeltype::text AS action
       FROM root JOIN pg_catalog.pg_constraint k ON k.oid = root.oid AND root.parentid = 0
       JOIN pg_catalog.pg_class c ON c.oid = k.conrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      ORDER BY 1, 2, 3`,
    [quoteQualified(target.schema, target.table)],
  );
  if (r.rows.length === 0) return;
  const keys = r.rows.map((k) => `${formatTableName({ schema: k.referencing_schema, table: k.referencing_table })} (${k.name} ON DELETE ${ACTIONS[k.action]})`);
  throw new PgExtractError(
    ErrorCode.TARGET_REPLACE_CASCADES,
    `replace would empty ${formatTableName(target)} with a DELETE, which would delete or change rows of other tables through their foreign keys: ${keys.join(', ')}`,
    { field: 'target.mode' },
  );
}

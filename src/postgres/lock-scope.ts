/**
 * What the lock modules share (table-lock.ts, snapshot-changes.ts, lock-blockers.ts): the
 * relations a lock takes along with the one it names, lock_timeout's SQLSTATE, and how their
 * messages list relations.
 */
import { VIEW_READS } from './catalog';

/**
 * The relations LOCK TABLE locks along with one it names (parent → child): a partitioned table's
 * partitions (one a `DETACH … CONCURRENTLY` left pending too), and the relations a view reads (not
 * a materialized view's: its query is not run when it is read, and LOCK TABLE does not take it).
 */
export const LOCKED_WITH = `
  SELECT i.inhparent AS parent, i.inhrelid AS child
    FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class p ON p.oid = i.inhparent
   WHERE p.relkind = 'p'
  UNION ALL${VIEW_READS}`;

/** lock_timeout's SQLSTATE. */
export const LOCK_NOT_AVAILABLE = '55P03';

/** Blockers named in a message, and relations named per blocker. */
export const SHOWN = 5;

/** `names` joined for a message: the first {@link SHOWN}, then how many more. */
export function listed(names: readonly string[]): string {
  return names.length > SHOWN ? `${names.slice(0, SHOWN).join(', ')}, … ${names.length - SHOWN} more` : names.join(', ');
}

/**
 * A lock timeout explained: LOCK_TIMEOUT naming who held or queued for the conflicting lock, read
 * from pg_locks after the wait ended (pg_blocking_pids only answers for a backend that is still
 * waiting), each blocker's query cut before its first literal or comment.
 */
import type { ClientBase } from 'pg';
import { ErrorCode, PgExtractError, addNote } from '../errors';
import { LOCKED_WITH, LOCK_NOT_AVAILABLE, SHOWN, listed } from './lock-scope';
import { quoteQualified } from './sql';

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

/**
 * `err` unchanged, or LOCK_TIMEOUT when it is a lock timeout (SQLSTATE 55P03), naming who holds or
 * waits for a conflicting lock on `tables` (the ones the failed statement was locking), their
 * partitions or a view's tables. Call it after the failed transaction was rolled back: it reads
 * pg_locks on `client`, without taking a lock on any of them. `heldByRun`: the run's coordinator
 * holds ACCESS SHARE on the tables (a read in its exported snapshot), so a blocker that waits for
 * ACCESS EXCLUSIVE there asked after the run locked them and waits for the run, as the run for it:
 * the message says so (its bare "waits for" read as a wait of its own). `givesWay`, when every
 * blocker is such a wait: SNAPSHOT_LOST instead, so the attempt gives way (its snapshot let go, the
 * migration and every session queued behind it go on) and a fresh snapshot is taken after it.
 * Retried as a LOCK_TIMEOUT, each try waited behind the same queue, then the run failed.
 */
export async function lockTimeoutError(
  client: ClientBase,
  err: unknown,
  tables: readonly { schema: string; table: string }[],
  timeoutMs: number,
  { heldByRun = false, givesWay = false }: { heldByRun?: boolean; givesWay?: boolean } = {},
): Promise<unknown> {
  if ((err as { code?: unknown })?.code !== LOCK_NOT_AVAILABLE) return err;
  const relations = tables.map((t) => quoteQualified(t.schema, t.table));
  let blockers: string;
  let behindRunOnly = false;
  try {
    const found = await conflictingLocks(client, relations);
    behindRunOnly = heldByRun && found.length > 0 && found.every((b) => !b.granted);
    // One table's blocker on that very table reads as before; anything else says where.
    const where = (b: Blocker) => (relations.length === 1 && b.relations.length === 1 && b.relations[0] === relations[0] ? '' : ` on ${listed(b.relations)}`);
    blockers = found.length
      ? found
          .slice(0, SHOWN)
          .map((b) => describe(b, where(b), heldByRun))
          .join('; ')
      : 'no conflicting lock is left (its holder let go)';
  } catch (readErr) {
    blockers = 'the blocker could not be read';
    addNote(err, `reading pg_locks failed: ${(readErr as Error).message}`);
  }
  const what = relations.length === 1 ? relations[0] : relations.length ? `one of ${relations.length} tables (${listed(relations)})` : 'a table';
  const message = `could not get ACCESS SHARE on ${what} within ${timeoutMs} ms: ${blockers}`;
  if (givesWay && behindRunOnly)
    return new PgExtractError(ErrorCode.SNAPSHOT_LOST, `${message}; the attempt gives way, and a fresh snapshot is taken after it`, {
      cause: err,
      endsHold: true,
    });
  return new PgExtractError(ErrorCode.LOCK_TIMEOUT, message, { cause: err });
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

function describe(b: Blocker, where: string, heldByRun: boolean): string {
  const who =
    b.pid === null ? 'a prepared transaction' : `pid ${b.pid} (application_name ${JSON.stringify(b.application_name ?? '')}, ${b.state ?? 'state unknown'})`;
  const query = b.query === null ? '' : `, query ${JSON.stringify(maskQuery(b.query))}`;
  const behindRun = heldByRun && !b.granted ? ", asked for after this run's snapshot locked the table: it waits for the run, as the run waits for it" : '';
  return `${who} ${b.granted ? 'holds' : 'waits for'} ${b.mode}${where}${query}${behindRun}`;
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

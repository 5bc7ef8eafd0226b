/**
 * Sessions on a load's target: the session a load runs on (its running statement is cancelled on
 * the server when the load is cancelled), and the check that an internal query's target is its
 * source database.
 */
import type { Client } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import { type ResolvedTable, selectSql } from '../postgres/catalog';
import { closeSession, openSession } from '../postgres/session';
import { sourceKindOf } from '../sources/source-kind';

/**
 * Opens the target session for `work`. When `signal` aborts, the statement running on it is
 * cancelled on the server (SessionOptions.signal), so the load rolls back promptly and `work`
 * ends only once that transaction has ended.
 */
export async function onTargetSession<T>(url: string, signal: AbortSignal, work: (client: Client) => Promise<T>): Promise<T> {
  // A failed cancel leaves the load's next signal check to stop it.
  const client = await openSession(url, 'target', { signal });
  try {
    return await work(client);
  } finally {
    await closeSession(client);
  }
}

/** The same cluster (system identifier) and the same database, seen from both URLs. */
export async function assertSameDatabase(sourceUrl: string, target: Client): Promise<void> {
  // A source of another kind (MySQL) is never the target database, and no PostgreSQL session can open on it.
  if (sourceKindOf(sourceUrl) !== 'postgresql') {
    throw new PgExtractError(ErrorCode.TARGET_NOT_SAME_DATABASE, 'target.via internal needs a PostgreSQL source that is the target database', {
      field: 'target.via',
    });
  }
  const identity = "SELECT system_identifier::text || '/' || current_database() AS id FROM pg_control_system()";
  const source = await openSession(sourceUrl, 'probe');
  try {
    const [a, b] = await Promise.all([source.query<{ id: string }>(identity), target.query<{ id: string }>(identity)]);
    if (a.rows[0]?.id !== b.rows[0]?.id) {
      throw new PgExtractError(ErrorCode.TARGET_NOT_SAME_DATABASE, 'target.via internal needs the target to be the source database', { field: 'target.via' });
    }
  } finally {
    await closeSession(source);
  }
}

/**
 * An internal read runs on the target session, with the target role's rights: the source role must
 * be able to read `table` itself (its columns granted, no row security policy applying to it, as
 * every source read sets row_security off), or a client naming a table would read what the source
 * role may not. Fails with the source's own error (SQLSTATE 42501).
 */
export async function assertSourceMayRead(sourceUrl: string, table: ResolvedTable): Promise<void> {
  const source = await openSession(sourceUrl, 'probe');
  try {
    await source.query(`SELECT pg_catalog.set_config('row_security', 'off', false)`);
    await source.query(`${selectSql(table)} LIMIT 0`);
  } finally {
    await closeSession(source);
  }
}

/**
 * Opens one PostgreSQL session for one job. Every session we open is tagged with an
 * `application_name` (so tests and operators find ours in pg_stat_activity) and runs with
 * TimeZone UTC (so key bounds and exported timestamptz values read the same everywhere).
 */
import { Client } from 'pg';

/** The application_name prefix of every session this product opens. */
export const APPLICATION_NAME = 'pg-extract';

/** Session roles, visible in pg_stat_activity.application_name as `pg-extract/<role>`. */
export type SessionRole = 'coordinator' | 'partition' | 'whole-copy' | 'stream' | 'target' | 'probe';

export async function openSession(url: string, role: SessionRole): Promise<Client> {
  const client = new Client({
    connectionString: url,
    application_name: `${APPLICATION_NAME}/${role}`,
    options: '-c TimeZone=UTC -c statement_timeout=0',
  });
  // An unhandled 'error' on an idle client (backend terminated) would crash the worker process.
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** Ends the session; never throws (a dead connection is already closed). */
export async function closeSession(client: Client): Promise<void> {
  await client.end().catch(() => undefined);
}

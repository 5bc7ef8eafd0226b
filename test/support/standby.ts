/**
 * A primary and its streaming hot standby of our own, for tests (and recorded histories) that read
 * from a standby. The standby cancels a conflicting read at once (max_standby_streaming_delay 0,
 * where the default waits 30 s), and {@link churning} makes such conflicts.
 */
import { Client } from 'pg';
import { type PostgresService, startLocalPostgres } from '../../devenv/postgres-service';
import { eventually } from './eventually';

/** Runs `sql` on a session of its own and returns the rows. */
export async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

export interface StandbyPair {
  primary: PostgresService;
  standby: PostgresService;
  stop(): Promise<void>;
}

/** Starts a primary, runs `sql` there, and starts its standby once that is done; resolves once the standby has replayed it. */
export async function startStandbyPair(sql: string): Promise<StandbyPair> {
  const primary = await startLocalPostgres();
  let standby: PostgresService | undefined;
  try {
    await query(primary.url, sql);
    standby = await startLocalPostgres({ standbyOf: primary.url, settings: { max_standby_streaming_delay: '0' } });
    await replayed(primary.url, standby.url);
  } catch (err) {
    await standby?.stop();
    await primary.stop();
    throw err;
  }
  const pair = { primary, standby };
  return { ...pair, stop: async () => void (await pair.standby.stop(), await pair.primary.stop()) };
}

/** Resolves once the standby has replayed everything the primary has written so far. */
export async function replayed(primaryUrl: string, standbyUrl: string): Promise<void> {
  const { lsn } = (await query<{ lsn: string }>(primaryUrl, 'SELECT pg_current_wal_lsn()::text AS lsn'))[0]!;
  const caughtUp = async () =>
    (await query<{ done: boolean }>(standbyUrl, `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS done`).catch(() => [{ done: false }]))[0]!.done;
  await eventually(caughtUp, 'the standby replaying the primary');
}

/**
 * Runs `work` while the primary updates and vacuums one row of `table` (`id int PRIMARY KEY, n int`,
 * holding the row id 1) over and over: each replayed cleanup conflicts with every older snapshot.
 */
export async function churning<T>(primaryUrl: string, table: string, work: () => Promise<T>): Promise<T> {
  const churner = new Client({ connectionString: primaryUrl });
  await churner.connect();
  let going = true;
  const churn = (async () => {
    while (going) {
      await churner.query(`UPDATE ${table} SET n = n + 1 WHERE id = 1`);
      await churner.query(`VACUUM ${table}`);
    }
  })();
  try {
    return await work();
  } finally {
    going = false;
    await churn;
    await churner.end();
  }
}

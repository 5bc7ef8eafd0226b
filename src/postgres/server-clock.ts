/**
 * Server-clock evidence for receipts: PostgreSQL's clock, and the REPEATABLE READ transaction of the
 * single-session strategies (whole copy, batched copy). The snapshot coordinator and
 * each partition open their own, since they export or import a snapshot in it. Timestamps come back
 * as ISO-8601 UTC strings with microseconds.
 */
import type { ClientBase } from 'pg';
import { type ExtractionLifecycleAuthority, SnapshotAuthority } from '../lifecycle';
import { digestSourceToken } from './source-token';
import { rollbackAfter } from './session';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../contract/extraction-input';
import { lockTimeoutError } from './lock-blockers';
import { type LockableTable, lockBeforeSnapshot, setLockTimeout } from './table-lock';

/** SQL for an instant as an ISO-8601 UTC string with microseconds. */
export function utcText(expr: string): string {
  return `to_char((${expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

/** `clock_timestamp()` now: after everything this session has done so far. */
export async function serverNow(client: ClientBase): Promise<string> {
  const r = await client.query<{ at: string }>(`SELECT ${utcText('clock_timestamp()')} AS at`);
  return r.rows[0]!.at;
}

/**
 * Opens `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`, locks `tables` (see
 * ./table-lock.ts lockBeforeSnapshot; a lock not granted within `lockTimeoutMs`, the rest of the
 * transaction's too, is LOCK_TIMEOUT naming who holds or waits for a conflicting one, the
 * transaction rolled back) and runs its first statement, which
 * takes the snapshot: the window starts at that statement (statement_timestamp) and the snapshot
 * is recorded as read during it (clock_timestamp), with the digest of pg_current_snapshot().
 */
export async function beginRepeatableRead(
  client: ClientBase,
  authority: ExtractionLifecycleAuthority,
  tables: readonly LockableTable[],
  lockTimeoutMs = DEFAULT_LOCK_TIMEOUT_MS,
): Promise<{ backendPid: number; snapshotDigest: string }> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  await setLockTimeout(client, lockTimeoutMs);
  try {
    await lockBeforeSnapshot(client, tables);
  } catch (err) {
    await rollbackAfter(client, err, 'read');
    throw await lockTimeoutError(client, err, tables, lockTimeoutMs);
  }
  const first = await client.query<{ snapshot: string; started: string; snapshot_at: string; pid: number }>(
    `SELECT pg_current_snapshot()::text AS snapshot, ${utcText('statement_timestamp()')} AS started,
            ${utcText('clock_timestamp()')} AS snapshot_at, pg_backend_pid() AS pid`,
  );
  const row = first.rows[0]!;
  const snapshotDigest = digestSourceToken(row.snapshot);
  authority.acquire(row.started);
  authority.acquireSnapshot(SnapshotAuthority.repeatableRead, snapshotDigest, row.snapshot_at);
  return { backendPid: row.pid, snapshotDigest };
}

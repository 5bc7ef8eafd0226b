/**
 * One partition of a partitioned export, on its own session: BEGIN REPEATABLE READ READ ONLY,
 * SET TRANSACTION SNAPSHOT '<id>' as the first statement, prove it is the planned snapshot on the
 * planned cluster and database, COPY its range into a file (waiting at most lock_timeout for the
 * table's ACCESS SHARE), commit, and report its backend pid and the snapshot text it saw as
 * evidence of the import. A group of small tables shares one such import (table-group-copy.ts).
 */
import type { Client } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import { type ResolvedTable, type TableRequest, resolveTables, sameSplitKey, selectSql, sourceColumns } from './catalog';
import { rollbackAfter } from './session';
import type { SplitKey } from '../contract/partition-range';
import type { CopiedOutput, OutputSink } from '../storage/output-sink';
import type { ExportFormat } from '../contract/formats';
import { exportToOutput } from './export-to-output';
import type { PartitionRange } from '../contract/partition-range';
import { rangePredicate } from './range-predicate';
import { serverNow, utcText } from './server-clock';
import { type ExpectedSnapshot, type IdentityRow, SOURCE_IDENTITY_COLUMNS, checkSnapshotIdentity, identityOf } from './source-identity';
import { snapshotIdLiteral } from './sql';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../contract/extraction-input';
import { lockTimeoutError } from './lock-blockers';
import { setLockTimeout } from './table-lock';

export interface PartitionFile extends CopiedOutput, PartitionRead {}

/** The exported snapshot a session imports and (when given) the snapshot digest and source identity it must see there. */
export interface SnapshotImport extends ExpectedSnapshot {
  snapshotId: string;
  /** @default DEFAULT_LOCK_TIMEOUT_MS */
  lockTimeoutMs?: number;
  /**
   * A lock timeout behind nothing but ACCESS EXCLUSIVE requests queued after the snapshot's holder
   * locked the table (a migration waiting for the run) is SNAPSHOT_LOST, so the run's attempt gives
   * way and a fresh one follows it (see ./lock-blockers.ts); else LOCK_TIMEOUT, retried as it is
   * (a stream load's range, whose retry exports afresh). @default false
   */
  givesWay?: boolean;
}

/** A table as the coordinator planned it: re-resolved from the catalog inside the snapshot, its split key unchanged. */
export interface PlannedTable {
  table: TableRequest;
  key: SplitKey | null;
}

/** What a partition reads. */
export interface PartitionRequest extends SnapshotImport, PlannedTable {
  range: PartitionRange;
  format: ExportFormat;
}

/** SQLSTATEs of a snapshot that can no longer be imported (its exporting transaction ended). */
const LOST_SNAPSHOT_STATES = new Set(['22023', '55000', '0A000']);

/**
 * After a refused import: SNAPSHOT_MISMATCH when this session is on another cluster or database than
 * the coordinator's (a pooler or balancer sending it elsewhere, a URL naming another database), which
 * refuses the id too (22023, 0A000), and where a fresh snapshot would be refused the same way.
 */
async function requireSameSource(client: Client, request: SnapshotImport): Promise<void> {
  if (!request.source) return;
  await client.query('ROLLBACK');
  const r = await client.query<IdentityRow>(`SELECT ${SOURCE_IDENTITY_COLUMNS}`);
  checkSnapshotIdentity({ source: request.source }, { snapshotText: '', source: identityOf(r.rows[0]!) });
}

/** What a partition's session proved about the snapshot it read, and when it read. */
export interface PartitionRead {
  backendPid: number;
  /** pg_current_snapshot() text seen after the import: equals the coordinator's. */
  snapshotText: string;
  startedAt: string;
  completedAt: string;
}

/** Runs on a fresh session the caller closes. The output appears under its location only when complete. */
export async function copyPartition(
  client: Client,
  request: PartitionRequest,
  output: OutputSink,
  options: { onBytes?: (bytes: number) => void; signal?: AbortSignal } = {},
): Promise<PartitionFile> {
  const { result: written, ...read } = await readPartition(client, request, (table) =>
    exportToOutput(client, selectSql(table, rangePredicate(request.range, table.key)), sourceColumns(table), request.format, output, options),
  );
  return { location: written.location, etag: written.etag, rows: written.rows, bytes: written.bytes, sha256: written.sha256, ...read };
}

/** What `read` gets inside the imported snapshot. */
export interface SnapshotRead {
  /** Re-resolves planned tables in one catalog query and checks that their split keys are unchanged. */
  resolve(planned: readonly PlannedTable[]): Promise<ResolvedTable[]>;
  /** Names the table being read now, for the error of a lock wait that times out. */
  reading(table: TableRequest): void;
}

/**
 * Imports the snapshot on `client`, proves it is the planned one on the planned cluster and
 * database, re-resolves the table, runs `read` and commits; rolls back on any failure.
 */
export async function readPartition<T>(
  client: Client,
  request: PartitionRequest,
  read: (table: ResolvedTable) => Promise<T>,
): Promise<PartitionRead & { result: T }> {
  return readInSnapshot(client, request, async (snapshot) => read((await snapshot.resolve([request]))[0]!));
}

/**
 * Imports the snapshot on `client` and proves it is the planned one on the planned cluster and
 * database, then runs `read` and commits; rolls back on any failure. One import serves every
 * table `read` reads.
 */
export async function readInSnapshot<T>(
  client: Client,
  request: SnapshotImport,
  read: (snapshot: SnapshotRead) => Promise<T>,
): Promise<PartitionRead & { result: T }> {
  const literal = snapshotIdLiteral(request.snapshotId);
  const lockTimeoutMs = request.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  let reading: TableRequest | null = null;
  const snapshot: SnapshotRead = {
    async resolve(planned) {
      reading = planned[0]?.table ?? null;
      const tables = await resolveTables(
        client,
        planned.map((p) => ({ ...p.table, key: p.key?.name })),
        { readRows: true },
      );
      for (const [i, table] of tables.entries()) {
        const key = planned[i]!.key;
        if (key && !sameSplitKey(table.key, key)) {
          throw new PgExtractError(ErrorCode.KEY_TYPE_UNSUPPORTED, 'the split key changed type or collation since planning', { field: 'key' });
        }
      }
      return tables;
    },
    reading: (table) => (reading = table),
  };
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  try {
    try {
      await client.query(`SET TRANSACTION SNAPSHOT ${literal}`);
    } catch (err) {
      const state = (err as { code?: string }).code;
      if (state && LOST_SNAPSHOT_STATES.has(state)) {
        await requireSameSource(client, request);
        throw new PgExtractError(ErrorCode.SNAPSHOT_LOST, 'the exported snapshot is gone (its coordinator transaction ended)', { cause: err });
      }
      throw err;
    }
    await setLockTimeout(client, lockTimeoutMs);
    const first = await client.query<{ pid: number; snapshot: string; started: string } & IdentityRow>(
      `SELECT pg_backend_pid() AS pid, pg_current_snapshot()::text AS snapshot, ${utcText('statement_timestamp()')} AS started, ${SOURCE_IDENTITY_COLUMNS}`,
    );
    checkSnapshotIdentity(request, { snapshotText: first.rows[0]!.snapshot, source: identityOf(first.rows[0]!) });
    const result = await read(snapshot);
    const completedAt = await serverNow(client);
    await client.query('COMMIT');
    const row = first.rows[0]!;
    return { result, backendPid: row.pid, snapshotText: row.snapshot, startedAt: row.started, completedAt };
  } catch (err) {
    await rollbackAfter(client, err, 'partition');
    // The snapshot's coordinator holds ACCESS SHARE on every table read here, so whoever is in the way waits for the run.
    throw reading ? await lockTimeoutError(client, err, [reading], lockTimeoutMs, { heldByRun: true, givesWay: request.givesWay }) : err;
  }
}

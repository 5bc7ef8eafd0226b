/**
 * Which cluster (system identifier) and database (oid) a session reads, and a partition's proof
 * that it imported the planned snapshot there: the digest of its pg_current_snapshot() equals
 * the plan's, on the coordinator's cluster and database. A snapshot id is only unique within one
 * server, so a partition sent to another cluster (a failed-over or misconfigured source) could
 * otherwise import a snapshot that merely has the same id.
 */
import type { SourceIdentity } from '../contract/partition-range';
import { ErrorCode, PgExtractError } from '../errors';
import { digestSourceToken } from './source-token';

/** Select-list items `system_identifier` and `database_oid`; read them with {@link identityOf}. */
export const SOURCE_IDENTITY_COLUMNS = `(SELECT system_identifier::text FROM pg_catalog.pg_control_system()) AS system_identifier,
  (SELECT oid::int8 FROM pg_catalog.pg_database WHERE datname = current_database()) AS database_oid`;

/** The row shape {@link SOURCE_IDENTITY_COLUMNS} adds (int8 arrives as text). */
export interface IdentityRow {
  system_identifier: string;
  database_oid: string;
}

export function identityOf(row: IdentityRow): SourceIdentity {
  return { systemIdentifier: row.system_identifier, databaseOid: Number(row.database_oid) };
}

/** What a partition must see; either part may be absent in requests from workflows started on older code. */
export interface ExpectedSnapshot {
  snapshotDigest?: string;
  source?: SourceIdentity;
}

/** Throws SNAPSHOT_MISMATCH unless the session sees the expected snapshot on the expected cluster and database. */
export function checkSnapshotIdentity(expected: ExpectedSnapshot, seen: { snapshotText: string; source: SourceIdentity }): void {
  const { source } = expected;
  if (source && (source.systemIdentifier !== seen.source.systemIdentifier || source.databaseOid !== seen.source.databaseOid)) {
    throw new PgExtractError(
      ErrorCode.SNAPSHOT_MISMATCH,
      `this partition reads cluster ${seen.source.systemIdentifier}, database oid ${seen.source.databaseOid}; ` +
        `the snapshot was exported on cluster ${source.systemIdentifier}, database oid ${source.databaseOid}`,
    );
  }
  if (expected.snapshotDigest !== undefined && expected.snapshotDigest !== digestSourceToken(seen.snapshotText)) {
    throw new PgExtractError(ErrorCode.SNAPSHOT_MISMATCH, 'the imported snapshot is not the one the coordinator exported (its digest differs)');
  }
}

/**
 * SQL safety, in one place. Identifiers are quoted by {@link quoteIdent} only; values that must
 * be written into SQL text (COPY and SET TRANSACTION SNAPSHOT take no bind parameters) go through
 * {@link quoteLiteral}; snapshot ids are checked against PostgreSQL's own format first. What a name
 * or a snapshot id may be is the contract's grammar (src/contract/identifiers.ts).
 */
import { checkIdentifier, isSnapshotId } from '../contract/identifiers';
import { ErrorCode, PgExtractError } from '../errors';

/** Double-quotes an identifier, doubling embedded quotes. Rejects what PostgreSQL cannot name. */
export function quoteIdent(name: string): string {
  checkIdentifier(name);
  return `"${name.replace(/"/g, '""')}"`;
}

/** `"schema"."table"` */
export function quoteQualified(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/**
 * A string literal safe under any `standard_conforming_strings`: quotes doubled, and the E''
 * form with doubled backslashes when a backslash is present (as libpq's PQescapeLiteral does).
 */
export function quoteLiteral(value: string): string {
  if (value.includes('\0')) throw new PgExtractError(ErrorCode.INPUT_INVALID, 'a literal cannot contain NUL');
  const quoted = `'${value.replace(/'/g, "''").replace(/\\/g, '\\\\')}'`;
  return value.includes('\\') ? `E${quoted}` : quoted;
}

/** The literal for `SET TRANSACTION SNAPSHOT`, or SNAPSHOT_ID_INVALID before any SQL runs. */
export function snapshotIdLiteral(id: unknown): string {
  if (!isSnapshotId(id)) {
    throw new PgExtractError(ErrorCode.SNAPSHOT_ID_INVALID, 'snapshot id is not a pg_export_snapshot() id', { field: 'snapshotId' });
  }
  return `'${id}'`;
}

/**
 * SQL safety, in one place. Identifiers are quoted by {@link quoteIdent} only; values that must
 * be written into SQL text (COPY and SET TRANSACTION SNAPSHOT take no bind parameters) go through
 * {@link quoteLiteral}; snapshot ids are checked against PostgreSQL's own format first.
 */
import { ErrorCode, PgExtractError } from '../errors';

const NAMEDATALEN = 64;

/** Double-quotes an identifier, doubling embedded quotes. Rejects what PostgreSQL cannot name. */
export function quoteIdent(name: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.includes('\0') || Buffer.byteLength(name) >= NAMEDATALEN) {
    throw new PgExtractError(ErrorCode.IDENTIFIER_INVALID, `not a valid PostgreSQL identifier: ${JSON.stringify(String(name).slice(0, 80))}`);
  }
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

/**
 * `pg_export_snapshot()` ids: `%08X-%08X-%d` since PostgreSQL 13 (`%08X-%d` before), e.g.
 * `00000003-0000001B-1`. https://www.postgresql.org/docs/current/functions-admin.html#FUNCTIONS-SNAPSHOT-SYNCHRONIZATION
 */
const SNAPSHOT_ID = /^[0-9A-F]{8}(?:-[0-9A-F]{8})?-[0-9]{1,10}$/;

export function isSnapshotId(value: unknown): value is string {
  return typeof value === 'string' && SNAPSHOT_ID.test(value);
}

/** The literal for `SET TRANSACTION SNAPSHOT`, or SNAPSHOT_ID_INVALID before any SQL runs. */
export function snapshotIdLiteral(id: unknown): string {
  if (!isSnapshotId(id)) {
    throw new PgExtractError(ErrorCode.SNAPSHOT_ID_INVALID, 'snapshot id is not a pg_export_snapshot() id', { field: 'snapshotId' });
  }
  return `'${id}'`;
}

/** A user-facing table name, `schema.table` or `table`, each part plain or double-quoted. */
const NAME_PART = String.raw`(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"\0]|"")+")`;
const QUALIFIED = new RegExp(`^(${NAME_PART})(?:\\.(${NAME_PART}))?$`);

function unquote(part: string): string {
  return part.startsWith('"') ? part.slice(1, -1).replace(/""/g, '"') : part.toLowerCase();
}

/** Parses `s.t` into catalog names (unquoted parts fold to lower case, as PostgreSQL does). */
export function parseTableName(input: string, field = 'table'): { schema: string; table: string } {
  const m = typeof input === 'string' ? QUALIFIED.exec(input) : null;
  if (!m) {
    throw new PgExtractError(ErrorCode.IDENTIFIER_INVALID, `${field} must be schema.table or table, got ${JSON.stringify(String(input).slice(0, 80))}`, { field });
  }
  const [, first, second] = m;
  const names = second === undefined ? { schema: 'public', table: unquote(first!) } : { schema: unquote(first!), table: unquote(second) };
  quoteIdent(names.schema);
  quoteIdent(names.table);
  return names;
}

/** A column name as given by a user: a plain identifier (folded) or a double-quoted one. */
export function parseColumnName(input: string, field: string): string {
  if (typeof input !== 'string' || !new RegExp(`^${NAME_PART}$`).test(input)) {
    throw new PgExtractError(ErrorCode.IDENTIFIER_INVALID, `${field} is not a column name: ${JSON.stringify(String(input).slice(0, 80))}`, { field });
  }
  const name = unquote(input);
  quoteIdent(name);
  return name;
}

/**
 * The identifier grammar users write and the contract checks: table and column names as PostgreSQL
 * reads them, and exported snapshot ids. Pure, so the input schema (and the workflow) can use it;
 * quoting them into SQL is src/postgres/sql.ts's job.
 */
import { ErrorCode, PgExtractError } from '../errors';

/** A Temporal run id, a UUID, as a pattern to build on (match it case-insensitively). */
export const RUN_ID_PATTERN = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const RUN_ID = new RegExp(`^${RUN_ID_PATTERN}$`, 'i');

/** Whether `value` is a run id ({@link RUN_ID_PATTERN}). */
export function isRunId(value: string): boolean {
  return RUN_ID.test(value);
}

/** PostgreSQL's name buffer: a name holds at most NAMEDATALEN - 1 bytes. */
export const NAMEDATALEN = 64;

/** Throws IDENTIFIER_INVALID unless PostgreSQL can name something `name`. */
export function checkIdentifier(name: string): void {
  if (typeof name !== 'string' || name.length === 0 || name.includes('\0') || new TextEncoder().encode(name).length >= NAMEDATALEN) {
    throw new PgExtractError(ErrorCode.IDENTIFIER_INVALID, `not a valid PostgreSQL identifier: ${JSON.stringify(String(name).slice(0, 80))}`);
  }
}

/**
 * `pg_export_snapshot()` ids: `%08X-%08X-%d` since PostgreSQL 13 (`%08X-%d` before), e.g.
 * `00000003-0000001B-1`. https://www.postgresql.org/docs/current/functions-admin.html#FUNCTIONS-SNAPSHOT-SYNCHRONIZATION
 */
const SNAPSHOT_ID = /^[0-9A-F]{8}(?:-[0-9A-F]{8})?-[0-9]{1,10}$/;

export function isSnapshotId(value: unknown): value is string {
  return typeof value === 'string' && SNAPSHOT_ID.test(value);
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
    throw new PgExtractError(ErrorCode.IDENTIFIER_INVALID, `${field} must be schema.table or table, got ${JSON.stringify(String(input).slice(0, 80))}`, {
      field,
    });
  }
  const [, first, second] = m;
  const names = second === undefined ? { schema: 'public', table: unquote(first!) } : { schema: unquote(first!), table: unquote(second) };
  checkIdentifier(names.schema);
  checkIdentifier(names.table);
  return names;
}

/** An unquoted part that parses back to itself: PostgreSQL's plain identifiers, already in lower case. */
const PLAIN_PART = /^[a-z_][a-z0-9_$]*$/;

/**
 * `schema.table` as a user would type it, each part double-quoted where it has to be (upper case,
 * spaces, quotes, non-ASCII…): the inverse of {@link parseTableName}, for passing catalog names on
 * to where an input is parsed.
 */
export function formatTableName({ schema, table }: { schema: string; table: string }): string {
  return `${formatName(schema)}.${formatName(table)}`;
}

/** One name as a user would type it: double-quoted where it has to be (see {@link formatTableName}). */
export function formatName(name: string): string {
  return PLAIN_PART.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/**
 * Splits a comma-separated list of names as a user types it (`--tables`, `--columns`): commas
 * inside double quotes belong to the name (`"a,b".t`), as in PostgreSQL. The parts are returned as
 * typed, for {@link parseTableName} or {@link parseColumnName} to check.
 */
export function splitNameList(list: string): string[] {
  const parts: string[] = [];
  let part = '';
  let quoted = false;
  for (const ch of list) {
    // A doubled "" inside quotes toggles twice: still quoted.
    if (ch === '"') quoted = !quoted;
    if (ch === ',' && !quoted) {
      parts.push(part);
      part = '';
    } else part += ch;
  }
  parts.push(part);
  return parts;
}

/** A column name as given by a user: a plain identifier (folded) or a double-quoted one. */
export function parseColumnName(input: string, field: string): string {
  return parseName(input, field, 'column', 'My Column');
}

/** A schema name as given by a user: a plain identifier (folded) or a double-quoted one. */
export function parseSchemaName(input: string, field: string): string {
  return parseName(input, field, 'schema', 'My Schema');
}

/** One name, its error naming `what` it should be and, for a name given, how to quote one (`example`). */
function parseName(input: string, field: string, what: string, example: string): string {
  if (typeof input !== 'string' || !new RegExp(`^${NAME_PART}$`).test(input)) {
    const hint = typeof input === 'string' && input !== '' ? ` (quote one with special characters, as "${example}")` : '';
    throw new PgExtractError(ErrorCode.IDENTIFIER_INVALID, `${field} is not a ${what} name${hint}: ${JSON.stringify(String(input).slice(0, 80))}`, { field });
  }
  const name = unquote(input);
  checkIdentifier(name);
  return name;
}

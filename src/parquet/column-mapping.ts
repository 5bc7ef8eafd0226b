/**
 * How each PostgreSQL column becomes a Parquet column, losslessly: the DuckDB expression that turns
 * the column's PostgreSQL CSV text into the DuckDB type whose Parquet encoding holds every value, and
 * that Parquet type's name (for the data package and the README's table). The text casts are the
 * DuckDB reader's (src/readers/duckdb.ts); what differs here is where a Parquet type would lose a
 * value that DuckDB's own type keeps: ±infinity dates and timestamps (DuckDB writes them as the
 * extreme integers, which readers take for real instants) and NaN in numeric(p,s) (DECIMAL has none)
 * fail with PARQUET_VALUE_UNREPRESENTABLE instead; intervals stay text (Parquet's INTERVAL holds
 * milliseconds, not PostgreSQL's microseconds); enums are plain strings. Integers, floats, boolean and
 * uuid are read by read_csv in their own type instead of as text and cast: the same values (NaN, ±Infinity
 * and -0 included), 2–5% less of the conversion's CPU on the bench table. Pure.
 */
import { ErrorCode, PgExtractError } from '../errors';
import { quoteIdent } from '../postgres/sql';
import { directType, duckdbValue, literal } from '../readers/duckdb';
import { parsePgType } from '../readers/pg-type';
import type { SourceColumn } from '../contract/source-column';

/** Prefix of the messages the guards below raise; the writer turns them into PARQUET_VALUE_UNREPRESENTABLE. */
export const UNREPRESENTABLE = 'unrepresentable in Parquet';

export interface ParquetColumn {
  /** The DuckDB type read_csv parses the column's CSV text into: `VARCHAR`, or the type itself where it needs no rewrite or guard. */
  readType: string;
  /** DuckDB select-list entry over the CSV's column of the same name. */
  expression: string;
  /** The Parquet physical or logical type written, e.g. `INT64`, `DECIMAL(10,2)`, `LIST<STRING>`, `STRING`. */
  parquetType: string;
}

/** Parquet types of the DuckDB types the reader's casts produce. */
const PARQUET_TYPES: Record<string, string> = {
  smallint: 'INT32 (INT(16))',
  integer: 'INT32',
  bigint: 'INT64',
  real: 'FLOAT',
  'double precision': 'DOUBLE',
  boolean: 'BOOLEAN',
  text: 'STRING',
  'character varying': 'STRING',
  character: 'STRING',
  uuid: 'UUID',
  bytea: 'BINARY',
  json: 'JSON',
  jsonb: 'JSON',
  date: 'DATE',
  'timestamp without time zone': 'TIMESTAMP(MICROS)',
  'timestamp with time zone': 'TIMESTAMP(MICROS, UTC)',
};

/** Element types an array keeps as a LIST (the DuckDB reader's list casts); other arrays stay text. */
const LIST_ELEMENTS = new Set(['smallint', 'integer', 'bigint', 'real', 'double precision', 'boolean', 'text', 'character varying', 'character', 'uuid']);

const TEMPORAL = new Set(['date', 'timestamp without time zone', 'timestamp with time zone']);

function decimalType(args: number[]): string | null {
  const [precision, scale = 0] = args;
  return precision !== undefined && precision <= 38 ? `DECIMAL(${precision},${scale})` : null;
}

/** `CASE WHEN <text test> THEN error(…) ELSE <value> END`: a value the type would lose fails loudly, naming its column. */
function guarded(column: SourceColumn, test: string, what: string, value: string): string {
  const message = literal(`${UNREPRESENTABLE}: column ${column.name} (${column.pgType}) holds ${what}`);
  return `CASE WHEN ${test} THEN error(${message}) ELSE ${value} END`;
}

export function parquetColumn(column: SourceColumn): ParquetColumn {
  const name = quoteIdent(column.name);
  const { base, args, array } = parsePgType(column.pgType);
  const entry = (expression: string, parquetType: string, readType = 'VARCHAR'): ParquetColumn => ({
    readType,
    expression: `${expression} AS ${name}`,
    parquetType,
  });
  // Enum labels are strings here (no `constraints.enum`): the reader's ENUM cast would only add a dictionary of them.
  const field = { name: column.name, pgType: column.pgType, type: 'string' as const };
  if (array) {
    const element = base === 'numeric' ? decimalType(args) : LIST_ELEMENTS.has(base) ? PARQUET_TYPES[base] : null;
    return element ? entry(duckdbValue(field), `LIST<${element}>`) : entry(name, 'STRING');
  }
  if (column.enumLabels) return entry(name, 'STRING');
  if (TEMPORAL.has(base)) return entry(guarded(column, `${name} IN ('infinity', '-infinity')`, '±infinity', duckdbValue(field)), PARQUET_TYPES[base]!);
  if (base === 'numeric') {
    const decimal = decimalType(args);
    return decimal ? entry(guarded(column, `${name} = 'NaN'`, 'NaN', duckdbValue(field)), decimal) : entry(name, 'STRING');
  }
  const parquetType = PARQUET_TYPES[base];
  const direct = directType(base);
  if (parquetType && direct) return entry(name, parquetType, direct);
  return parquetType ? entry(duckdbValue(field), parquetType) : entry(name, 'STRING');
}

/**
 * A Parquet file needs a column; a table with none (csv and binary write it as an empty line or an
 * empty tuple per row) is refused with FORMAT_OPTIONS_INVALID before any of it is written.
 */
export function requireParquetColumns(table: string | null, columns: readonly unknown[]): void {
  if (columns.length > 0) return;
  // A table of a set is named (the run has others); a one-table run's is the run's own.
  const message = table
    ? `${table} has no columns, and a Parquet file needs one: export the run as csv or binary, or leave ${table} out of it`
    : 'the table has no columns, and a Parquet file needs one: export it as csv or binary';
  throw new PgExtractError(ErrorCode.FORMAT_OPTIONS_INVALID, message, { field: 'format' });
}

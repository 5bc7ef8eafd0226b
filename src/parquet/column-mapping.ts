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
import { LIST_ELEMENTS, directType, duckdbValue, literal, numericType } from '../readers/duckdb';
import { parsePgType } from '../readers/pg-type';
import type { SourceColumn } from '../contract/source-column';

/** Prefix of the messages the guards below raise; the writer turns them into PARQUET_VALUE_UNREPRESENTABLE. */
export const UNREPRESENTABLE = 'unrepresentable in Parquet';

export interface ParquetColumn {
  /** The DuckDB type read_csv parses the column's CSV text into: `VARCHAR`, or the type itself where it needs no rewrite or guard. */
  readType: string;
  /** DuckDB select-list entry over the CSV's column of the same name. */
  expression: string;
  /** The Parquet physical or logical type written, e.g. `INT64`, `DECIMAL(10,2)`, `LIST<INT32>`, `STRING`. */
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

const TEMPORAL = new Set(['date', 'timestamp without time zone', 'timestamp with time zone']);

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
    const element = base === 'numeric' ? numericType(args) : LIST_ELEMENTS.has(base) ? PARQUET_TYPES[base] : null;
    return element ? entry(duckdbValue(field), `LIST<${element}>`) : entry(name, 'STRING');
  }
  if (column.enumLabels) return entry(name, 'STRING');
  if (TEMPORAL.has(base)) return entry(guarded(column, `${name} IN ('infinity', '-infinity')`, '±infinity', duckdbValue(field)), PARQUET_TYPES[base]!);
  if (base === 'numeric') {
    const decimal = numericType(args);
    return decimal ? entry(guarded(column, `${name} = 'NaN'`, 'NaN', duckdbValue(field)), decimal) : entry(name, 'STRING');
  }
  const parquetType = PARQUET_TYPES[base];
  const direct = directType(base);
  if (parquetType && direct) return entry(name, parquetType, direct);
  return parquetType ? entry(duckdbValue(field), parquetType) : entry(name, 'STRING');
}

/**
 * A Parquet file needs a column; a table with none (csv and binary write it as an empty line or an
 * empty tuple per row) is refused with FORMAT_OPTIONS_INVALID before any of it is written. So is a
 * table with two columns whose names differ only in case (`"A"` and `a`): DuckDB, which writes the
 * file, takes them for one name and would fail every try of the conversion.
 */
export function requireParquetColumns(table: string | null, columns: readonly { name: string }[]): void {
  // A table of a set is named (the run has others); a one-table run's is the run's own.
  const csvInstead = table ? `export the run as csv or binary, or leave ${table} out of it` : 'export it as csv or binary';
  const refuse = (problem: string) =>
    new PgExtractError(ErrorCode.FORMAT_OPTIONS_INVALID, `${table ?? 'the table'} ${problem}: ${csvInstead}`, { field: 'format' });
  if (columns.length === 0) throw refuse('has no columns, and a Parquet file needs one');
  const seen = new Map<string, string>();
  for (const { name } of columns) {
    // DuckDB folds ASCII letters only: "É" and "é" are two names to it.
    const folded = name.replace(/[A-Z]/g, (c) => c.toLowerCase());
    const other = seen.get(folded);
    if (other !== undefined)
      throw refuse(`has columns ${JSON.stringify(other)} and ${JSON.stringify(name)}, one name to DuckDB (which writes Parquet; its names ignore case)`);
    seen.set(folded, name);
  }
}

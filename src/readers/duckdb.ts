/**
 * One DuckDB statement that reads a data package resource's CSV files with the source's column
 * names and exact types. Every column is read as text (NULL only for an unquoted empty field,
 * `allow_quoted_nulls=false`) and cast in the select list, because PostgreSQL's text forms need a
 * few rewrites DuckDB's casts do not make themselves: BC dates (`0044-03-15 BC` → `0044-03-15 (BC)`,
 * which a plain cast would read as AD), intervals' `+` signs, bytea's `\x` hex and arrays' braces.
 * Pure.
 */
import { ErrorCode, PgExtractError } from '../errors';
import { quoteIdent } from '../postgres/sql';
import type { DataPackageResource, TableSchemaField } from './data-package';
import { parsePgType } from './pg-type';

/** DuckDB's string literal: quotes doubled; backslashes are plain characters there (unlike PostgreSQL's E''). */
export function literal(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/**
 * A file's path as DuckDB's file functions take it literally: they expand `*`, `?` and `[…]` as
 * patterns (an output folder named `q?x` would also read `qax`), and a one-character class matches
 * the character itself.
 */
export function literalPath(path: string): string {
  return literal(path.replace(/[*?[]/g, (c) => `[${c}]`));
}

/** Element types whose PostgreSQL text DuckDB casts as is; arrays of them become LISTs. */
const DIRECT: Record<string, string> = {
  smallint: 'SMALLINT',
  integer: 'INTEGER',
  bigint: 'BIGINT',
  real: 'FLOAT',
  'double precision': 'DOUBLE',
  boolean: 'BOOLEAN',
  text: 'VARCHAR',
  'character varying': 'VARCHAR',
  character: 'VARCHAR',
  uuid: 'UUID',
};

/** DuckDB's own type for a scalar PostgreSQL type whose text read_csv parses exactly as the cast does; undefined for others. */
export function directType(base: string): string | undefined {
  return DIRECT[base];
}

/**
 * Element types whose PostgreSQL text never holds a quote, bracket, brace or comma, so DuckDB's list
 * cast reads an array of them exactly. Arrays of text types stay text: PostgreSQL leaves `'`, `[`,
 * `]` and `(` unquoted in them (`{it's,x]}`, `{'a,b'}`), and DuckDB's list cast takes those for
 * its own quoting and nesting, merging or refusing elements.
 */
export const LIST_ELEMENTS: ReadonlySet<string> = new Set(['smallint', 'integer', 'bigint', 'real', 'double precision', 'boolean', 'uuid']);

/**
 * `numeric(p,s)` fits DECIMAL up to 38 digits; wider or unconstrained numeric stays exact as text,
 * never DOUBLE. PostgreSQL 15 allows a scale above the precision (`numeric(2,5)`: every value
 * under 0.001), which DECIMAL(5,5) holds; DECIMAL cannot have a scale above its width.
 */
export function numericType(args: number[]): string | null {
  const [precision, scale = 0] = args;
  if (precision === undefined) return null;
  const width = Math.max(precision, scale);
  return width <= 38 ? `DECIMAL(${width},${scale})` : null;
}

/** Moves PostgreSQL's trailing ` BC` to where DuckDB reads it: after the date part. */
function bcDate(column: string): string {
  // The regular expression only where it can match: it is most of the cast's cost.
  return `CASE WHEN suffix(${column}, ' BC') THEN regexp_replace(${column}, '^([0-9]+-[0-9]+-[0-9]+)(.*) BC$', '\\1 (BC)\\2') ELSE ${column} END`;
}

/** The expression that turns the text column into the field's DuckDB type (the column itself when text is its type). */
export function duckdbValue(field: TableSchemaField): string {
  const column = quoteIdent(field.name);
  const { base, args, array } = parsePgType(field.pgType);
  const cast = (expression: string, type: string): string => `CAST(${expression} AS ${type})`;
  if (array) {
    const element = base === 'numeric' ? numericType(args) : LIST_ELEMENTS.has(base) ? DIRECT[base] : undefined;
    if (!element) return column;
    // `{1,NULL,-2}` → `[1,NULL,-2]`: DuckDB's list cast reads these elements as PostgreSQL writes them. A nested or
    // bounded array (`{{1,2}}`, `[0:1]={…}`) would come out as a list of texts, so it fails the statement instead.
    const list = `CASE WHEN ${column} <> '{}' AND NOT regexp_matches(${column}, '^\\{[^{]') THEN error('not a one-dimensional array: ' || ${column}) ELSE '[' || ${column}[2:-2] || ']' END`;
    return cast(list, `${element}[]`);
  }
  if (field.constraints?.enum) return cast(column, `ENUM(${field.constraints.enum.map(literal).join(', ')})`);
  if (DIRECT[base]) return cast(column, DIRECT[base]);
  switch (base) {
    case 'numeric': {
      const type = numericType(args);
      return type ? cast(column, type) : column;
    }
    case 'json':
    case 'jsonb':
      return cast(column, 'JSON');
    case 'bytea':
      return `from_hex(${column}[3:])`;
    case 'date':
      return cast(bcDate(column), 'DATE');
    case 'timestamp without time zone':
      return cast(bcDate(column), 'TIMESTAMP');
    case 'timestamp with time zone':
      return cast(bcDate(column), 'TIMESTAMPTZ');
    case 'interval':
      // IntervalStyle postgres writes `1 day +02:00:00`; DuckDB takes the time part unsigned or with `-`.
      return cast(`replace(${column}, '+', '')`, 'INTERVAL');
    default:
      return column;
  }
}

/** The select-list entry: the field's value under its own name. */
function duckdbExpression(field: TableSchemaField): string {
  return `${duckdbValue(field)} AS ${quoteIdent(field.name)}`;
}

/** `SELECT … FROM read_csv([...], …)` over `locations` (the resource's files, where this reader finds them). */
export function duckdbStatement(resource: DataPackageResource, locations: string[]): string {
  // Parquet files carry their own names and types (README, "Parquet").
  if (resource.format === 'parquet') return `SELECT * FROM read_parquet([${locations.map(literalPath).join(', ')}]);`;
  return `${duckdbSelect(resource, locations, AS_TEXT)};`;
}

/** read_csv's names for a resource's compression. */
const DUCKDB_COMPRESSIONS = { gz: 'gzip', zst: 'zstd', none: 'none' } as const;

/** How a select reads each field: read_csv's type for the field's text, and the select-list entry over that column. */
export interface FieldReading {
  readType(field: TableSchemaField): string;
  expression(field: TableSchemaField): string;
}

/** This reader's: every field read as text and cast in the select list. */
const AS_TEXT: FieldReading = { readType: () => 'VARCHAR', expression: duckdbExpression };

/** The same select without its `;`, reading the fields as `reading` says (the Parquet writer's differ). */
export function duckdbSelect(resource: DataPackageResource, locations: string[], reading: FieldReading, readOptions: string[] = []): string {
  const fields = resource.schema?.fields ?? [];
  if (fields.length === 0) {
    throw new PgExtractError(
      ErrorCode.READER_FORMAT_UNSUPPORTED,
      `${resource.pgTable} has no columns: its files hold an empty row per row, which DuckDB cannot read (its rows are counted in the manifest)`,
    );
  }
  const dialect = resource.dialect;
  if (resource.format !== 'csv' || !dialect) {
    throw new PgExtractError(ErrorCode.READER_FORMAT_UNSUPPORTED, `${resource.pgTable} was written as ${resource.format}: DuckDB reads the CSV runs only`);
  }
  const columns = fields.map((f) => `${literal(f.name)}: ${literal(reading.readType(f))}`).join(', ');
  const options = [
    `header = ${dialect.header === true}`,
    `delim = ${literal(dialect.delimiter)}`,
    `quote = ${literal(dialect.quoteChar)}`,
    `escape = ${literal(dialect.quoteChar)}`,
    `nullstr = ${literal(dialect.nullSequence)}`,
    'allow_quoted_nulls = false',
    'auto_detect = false',
    // PostgreSQL ends lines with \n; told nothing, DuckDB takes a \r inside the first line's quoted value for a line end.
    "new_line = '\\n'",
    `compression = ${literal(DUCKDB_COMPRESSIONS[resource.compression ?? 'none'])}`,
    `columns = {${columns}}`,
    ...readOptions,
  ];
  const select = fields.map((f) => reading.expression(f)).join(',\n       ');
  return `SELECT ${select}\n  FROM read_csv([${locations.map(literalPath).join(', ')}],\n       ${options.join(',\n       ')})`;
}

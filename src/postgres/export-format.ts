/** The COPY statements that write and read a query's rows in an export format (src/contract/formats.ts). */
import type { ExportFormat } from '../contract/formats';
import { quoteIdent } from './sql';

/**
 * COPY's options for a format. Parquet is written from CSV (src/parquet/), whose text forms the
 * converter reads exactly, with a header line: DuckDB drops a byte-order mark at the start of what it
 * reads, which without one would be the start of the first row's first value.
 */
function copyOptions(format: ExportFormat): string {
  if (format.format === 'binary') return 'FORMAT binary';
  return `FORMAT csv, HEADER ${format.format === 'parquet' || format.header ? 'true' : 'false'}`;
}

/** `COPY (select) TO STDOUT (…)` in the requested format. */
export function copyOutSql(select: string, format: ExportFormat): string {
  return `COPY (${select}) TO STDOUT (${copyOptions(format)})`;
}

/**
 * `COPY <table> [(columns)] FROM STDIN (…)` reading the requested format; `table` is already quoted.
 * With `columns` each field goes to the column of its name, and the table's other columns get their defaults.
 */
export function copyInSql(table: string, format: ExportFormat, columns?: readonly string[]): string {
  const list = columns?.length ? ` (${columns.map(quoteIdent).join(', ')})` : '';
  return `COPY ${table}${list} FROM STDIN (${copyOptions(format)})`;
}

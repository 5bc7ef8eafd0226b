/** The COPY statements that write and read a query's rows in an export format (src/contract/formats.ts). */
import type { ExportFormat } from '../contract/formats';
import { quoteIdent } from './sql';

/** COPY's options for a format. Parquet is written from CSV without a header (src/parquet/), whose text forms the converter reads exactly. */
function copyOptions(format: ExportFormat): string {
  return format.format === 'binary' ? 'FORMAT binary' : `FORMAT csv, HEADER ${format.format === 'csv' && format.header ? 'true' : 'false'}`;
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

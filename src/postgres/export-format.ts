/** The COPY statements that write and read a query's rows in an export format (src/contract/formats.ts). */
import type { ExportFormat } from '../contract/formats';

/** COPY's options for a format. Parquet is written from CSV without a header (src/parquet/), whose text forms the converter reads exactly. */
function copyOptions(format: ExportFormat): string {
  return format.format === 'binary' ? 'FORMAT binary' : `FORMAT csv, HEADER ${format.format === 'csv' && format.header ? 'true' : 'false'}`;
}

/** `COPY (select) TO STDOUT (…)` in the requested format. */
export function copyOutSql(select: string, format: ExportFormat): string {
  return `COPY (${select}) TO STDOUT (${copyOptions(format)})`;
}

/** `COPY <table> FROM STDIN (…)` reading the requested format; `table` is already quoted. */
export function copyInSql(table: string, format: ExportFormat): string {
  return `COPY ${table} FROM STDIN (${copyOptions(format)})`;
}

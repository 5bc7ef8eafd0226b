/** Export formats: the COPY options and file suffix for each. Pure, so the workflow can name files. */
import type { ParquetCompression } from '../shared/format-options';

/** How rows are written. */
export interface ExportFormat {
  format: 'csv' | 'binary' | 'parquet';
  /** CSV header line (ignored for binary and Parquet). */
  header: boolean;
  gzip: boolean;
  /** Parquet only; see src/shared/format-options.ts for the defaults. */
  compression?: ParquetCompression | undefined;
  rowGroupRows?: number | undefined;
}

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

const EXTENSIONS = { csv: '.csv', binary: '.pgcopy', parquet: '.parquet' } as const;

/** The file name suffix for a format. */
export function fileExtension(format: ExportFormat): string {
  return `${EXTENSIONS[format.format]}${format.gzip ? '.gz' : ''}`;
}

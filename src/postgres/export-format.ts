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

/**
 * `COPY (select) TO STDOUT (…)` in the requested format. Parquet is written from CSV without a
 * header (src/parquet/), whose text forms the converter reads exactly.
 */
export function copyOutSql(select: string, format: ExportFormat): string {
  if (format.format === 'binary') return `COPY (${select}) TO STDOUT (FORMAT binary)`;
  const header = format.format === 'csv' && format.header;
  return `COPY (${select}) TO STDOUT (FORMAT csv, HEADER ${header ? 'true' : 'false'})`;
}

const EXTENSIONS = { csv: '.csv', binary: '.pgcopy', parquet: '.parquet' } as const;

/** The file name suffix for a format. */
export function fileExtension(format: ExportFormat): string {
  return `${EXTENSIONS[format.format]}${format.gzip ? '.gz' : ''}`;
}

/** Export formats and the file suffix each gets. Pure, so the workflow can name files. */
import type { ParquetCompression } from './format-options';

/** How rows are written. */
export interface ExportFormat {
  format: 'csv' | 'binary' | 'parquet';
  /** CSV header line (ignored for binary and Parquet). */
  header: boolean;
  gzip: boolean;
  /** Parquet only; see src/contract/format-options.ts for the defaults. */
  compression?: ParquetCompression | undefined;
  rowGroupRows?: number | undefined;
}

const EXTENSIONS = { csv: '.csv', binary: '.pgcopy', parquet: '.parquet' } as const;

/** The file name suffix for a format. */
export function fileExtension(format: ExportFormat): string {
  return `${EXTENSIONS[format.format]}${format.gzip ? '.gz' : ''}`;
}

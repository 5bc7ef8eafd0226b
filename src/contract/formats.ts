/** Export formats and the file suffix each gets. Pure, so the workflow can name files. */
import type { Compression, FileCompression } from './format-options';

/** How rows are written. */
export interface ExportFormat {
  format: 'csv' | 'binary' | 'parquet';
  /** CSV header line (ignored for binary and Parquet). */
  header: boolean;
  /** The older spelling of `compression: 'gzip'` for CSV and binary files. */
  gzip: boolean;
  /** CSV and binary: the whole file's (none when absent); Parquet: its columns'. See src/contract/format-options.ts. */
  compression?: Compression | undefined;
  rowGroupRows?: number | undefined;
}

const EXTENSIONS = { csv: '.csv', binary: '.pgcopy', parquet: '.parquet' } as const;
const COMPRESSED_EXTENSIONS = { gzip: '.gz', zstd: '.zst', none: '' } as const;

/** How a whole CSV or binary file is compressed (a Parquet file is never compressed whole). */
export function fileCompression(format: ExportFormat): FileCompression {
  if (format.format === 'parquet') return 'none';
  if (format.gzip) return 'gzip';
  return format.compression === 'gzip' || format.compression === 'zstd' ? format.compression : 'none';
}

/** The file name suffix for a format. */
export function fileExtension(format: ExportFormat): string {
  return `${EXTENSIONS[format.format]}${COMPRESSED_EXTENSIONS[fileCompression(format)]}`;
}

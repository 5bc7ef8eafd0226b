/**
 * Which options go with which output format, checked with the rest of the workflow input: Parquet
 * compresses its own columns (`compression`, `rowGroupRows`) and is read by Parquet readers only, so
 * `gzip`, and a built-in load that COPYs files into PostgreSQL, go with CSV and binary only. CSV and
 * binary files are compressed whole (`compression` zstd, gzip or none; `gzip` is the older spelling of gzip). Pure.
 */
import type { z } from 'zod';
import { ErrorCode } from '../errors';

export const PARQUET_COMPRESSIONS = ['zstd', 'snappy', 'none'] as const;
export type ParquetCompression = (typeof PARQUET_COMPRESSIONS)[number];
export const DEFAULT_PARQUET_COMPRESSION: ParquetCompression = 'zstd';
export const FILE_COMPRESSIONS = ['zstd', 'gzip', 'none'] as const;
export type FileCompression = (typeof FILE_COMPRESSIONS)[number];
/** Every value `compression` takes; which apply depends on the format. */
export const COMPRESSIONS = ['zstd', 'gzip', 'snappy', 'none'] as const;
export type Compression = (typeof COMPRESSIONS)[number];

/**
 * 15 vectors of 2048 rows, a quarter of DuckDB's own default (122 880): a conversion holds one row group
 * in memory, and a 2-partition run of the bench table peaked about 30 MB lower (worker 337–340 MB
 * against 368–374 MB) for the same CPU.
 */
export const DEFAULT_ROW_GROUP_ROWS = 30_720;
export const MAX_ROW_GROUP_ROWS = 10_000_000;

interface FormatOptions {
  format: 'csv' | 'binary' | 'parquet';
  gzip: boolean;
  compression?: Compression | undefined;
  rowGroupRows?: number | undefined;
  target?: { via: 'files' | 'internal' | 'stream' } | undefined;
}

export function formatOptionsCheck(input: FormatOptions, ctx: z.RefinementCtx): void {
  const fail = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message, params: { code: ErrorCode.FORMAT_OPTIONS_INVALID } });
  if (input.format === 'parquet') {
    if (input.gzip) fail('gzip', 'Parquet compresses its columns itself: use compression (zstd, snappy or none), not gzip');
    if (input.compression === 'gzip') fail('compression', 'Parquet columns are compressed with zstd, snappy or none');
    if (input.target?.via === 'files') fail('target', 'the built-in loader COPYs CSV or binary files into PostgreSQL; it cannot load Parquet');
    if (input.target?.via === 'stream') fail('target', 'a stream moves rows as CSV or binary COPY and writes no file: Parquet does not apply');
    return;
  }
  if (input.compression === 'snappy') fail('compression', `${input.format} files are compressed with zstd, gzip or none`);
  if (input.gzip && input.compression !== undefined && input.compression !== 'gzip') fail('gzip', `gzip contradicts compression ${input.compression}`);
  if (input.rowGroupRows !== undefined) fail('rowGroupRows', `row groups are for the parquet format, not ${input.format}`);
}

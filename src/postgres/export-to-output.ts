/**
 * Writes a select's rows into an output sink in the requested format: COPY's own bytes for CSV and
 * binary, a Parquet file made from them for Parquet (src/parquet/). One entry point for the whole
 * and the partitioned copy alike.
 */
import type { Client } from 'pg';
import { writeParquet } from '../parquet/parquet-output';
import type { SourceColumn } from '../contract/source-column';
import type { WrittenFile } from '../contract/file-receipt';
import { compressStage } from '../storage/file-compression';
import type { OutputSink, StoredOutput } from '../storage/output-sink';
import { copyToOutput } from './copy-to-output';
import type { ExportFormat } from '../contract/formats';
import { copyOutSql } from './export-format';

export interface ExportToOutputOptions {
  onBytes?: ((bytes: number) => void) | undefined;
  signal?: AbortSignal | undefined;
}

/** See {@link copyToOutput} for what the caller owns (the transaction) and what a failure leaves (nothing). */
export function exportToOutput(
  client: Client,
  select: string,
  columns: SourceColumn[],
  format: ExportFormat,
  sink: OutputSink,
  options: ExportToOutputOptions,
): Promise<WrittenFile & StoredOutput & { rows: number }> {
  if (format.format === 'parquet') return writeParquet(client, select, columns, format, sink, options);
  return copyToOutput(client, copyOutSql(select, format), sink, {
    compress: (recycle) => compressStage(format, recycle),
    onBytes: options.onBytes,
    signal: options.signal,
  });
}

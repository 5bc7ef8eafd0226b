/**
 * One Parquet output: the COPY's CSV flows through a named pipe into DuckDB, which writes a scratch
 * Parquet file as the rows arrive, and that file is streamed into the sink (a local file or an S3
 * object), counted and hashed as stored, so the receipt's bytes and sha256 are the finished file's.
 * Either side failing stops the other. DuckDB first reads with a small CSV buffer (memory per
 * conversion); a row longer than it has the COPY read to its end and run again, in the same
 * transaction, with the largest. The scratch folder (./scratch.ts) is removed on every path.
 */
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Client } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import { ByteCount, Digest, copyThrough } from '../postgres/copy-to-output';
import type { CopyOutStream } from '../postgres/copy-out-stream';
import type { ExportFormat } from '../contract/formats';
import { copyOutSql } from '../postgres/export-format';
import type { SourceColumn } from '../contract/source-column';
import type { WrittenFile } from '../contract/file-receipt';
import { type OutputSink, type StoredOutput, discardAfter } from '../storage/output-sink';
import { type CsvToParquetRequest, ROW_BYTES_LIMITS, csvToParquet } from './csv-to-parquet';
import { type FifoSink, makeFifo, openFifoWhenRead } from './fifo-sink';
import { requireParquetColumns } from './column-mapping';
import { makeScratch, requirePlainScratchParent } from './scratch';

export interface ParquetOutputOptions {
  /** Called with the CSV bytes read so far, then the Parquet bytes stored (progress only). */
  onBytes?: (bytes: number) => void;
  signal?: AbortSignal;
}

export async function writeParquet(
  client: Client,
  select: string,
  columns: SourceColumn[],
  format: ExportFormat,
  sink: OutputSink,
  options: ParquetOutputOptions,
): Promise<WrittenFile & StoredOutput & { rows: number }> {
  requireParquetColumns(null, columns);
  requirePlainScratchParent();
  const scratch = await makeScratch();
  try {
    for (const [attempt, maxRowBytes] of ROW_BYTES_LIMITS.entries()) {
      const files = { csv: join(scratch, `rows-${attempt + 1}.csv`), parquet: join(scratch, `rows-${attempt + 1}.parquet`), scratch };
      const lastAttempt = attempt === ROW_BYTES_LIMITS.length - 1;
      const rows = await convertCopy(client, select, columns, format, { ...files, maxRowBytes }, lastAttempt, options);
      if (rows !== null) return { ...(await storeFile(files.parquet, sink, options)), rows };
      // The scratch disk holds one Parquet file at a time.
      await rm(files.parquet, { force: true });
    }
    throw new Error('unreachable: the last attempt returns rows or throws');
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * One COPY of the select into one conversion; the rows written, or null when a row was longer than `maxRowBytes`
 * and this is not the last attempt. Then the COPY has been read to its end (its rest dropped), so the session's
 * REPEATABLE READ transaction is still open and a second COPY reads the same rows. A row past DuckDB's buffer
 * mostly fails the conversion, but the last row of the input, past two buffers, is left out without an error:
 * so the COPY's longest row decides, whatever DuckDB said.
 */
async function convertCopy(
  client: Client,
  select: string,
  columns: SourceColumn[],
  format: ExportFormat,
  files: Pick<CsvToParquetRequest, 'csv' | 'parquet' | 'scratch' | 'maxRowBytes'>,
  lastAttempt: boolean,
  options: ParquetOutputOptions,
): Promise<number | null> {
  await makeFifo(files.csv);
  let pipe: FifoSink | null = null;
  let source: CopyOutStream | null = null;
  const rowTooLong = (): boolean => (source?.longestRow ?? 0) > files.maxRowBytes;
  // Not DuckDB's error: it may quote the row.
  const tooLongError = () =>
    new PgExtractError(
      ErrorCode.PARQUET_ROW_TOO_LONG,
      `a row's CSV line is ${source?.longestRow} bytes, more than the ${files.maxRowBytes} a Parquet conversion reads`,
    );
  let conversion: Promise<unknown> = Promise.resolve();
  const convert = (signal: AbortSignal) =>
    (conversion = csvToParquet({ ...files, columns, format, signal }).catch((err: unknown) => {
      // DuckDB has read no row the COPY has not passed on, and the COPY knows a row's length from its header.
      if (signal.aborted || !rowTooLong()) throw err;
      if (lastAttempt) throw tooLongError();
      pipe?.drain();
      return null;
    }));
  const copy = async (signal: AbortSignal) => {
    pipe = await openFifoWhenRead(files.csv, signal, conversion);
    try {
      // The CSV is no file anyone keeps: its bytes are counted for progress, not hashed (a sha256 of them was
      // about 0.1 s of the event loop's time per million bench rows).
      const count = new ByteCount(options.onBytes ?? (() => undefined));
      const stages = (copied: CopyOutStream) => {
        source = copied;
        return [count, pipe!.open((chunk) => copied.recycle(chunk))];
      };
      return await copyThrough(client, copyOutSql(select, format), stages, signal);
    } finally {
      pipe.close();
    }
  };
  const [written, copied] = await firstFailureStopsBoth(options.signal, [convert, copy]);
  if (rowTooLong()) {
    if (lastAttempt) throw tooLongError();
    return null;
  }
  const rows = copied.rowCount;
  if (written !== rows) throw new PgExtractError(ErrorCode.SOURCE_READ_FAILED, `the Parquet file holds ${written} rows; the COPY sent ${rows}`);
  return rows;
}

/**
 * Runs both sides at once; the first to fail aborts the other (a COPY aborted mid-stream closes its
 * session, as on any abort) and is the error reported, once both have stopped. The COPY does not fail
 * when the reader stops (./fifo-sink.ts), so the reader's own error is the one reported.
 */
async function firstFailureStopsBoth<A, B>(
  signal: AbortSignal | undefined,
  [first, second]: [(signal: AbortSignal) => Promise<A>, (signal: AbortSignal) => Promise<B>],
): Promise<[A, B]> {
  const stop = new AbortController();
  const both = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  const failures: unknown[] = [];
  const failed = (error: unknown): never => {
    failures.push(error);
    stop.abort();
    throw error;
  };
  const [a, b] = await Promise.allSettled([first(both).catch(failed), second(both).catch(failed)]);
  if (a.status === 'rejected' || b.status === 'rejected') throw failures[0];
  return [a.value, b.value];
}

/** Streams a finished file into the sink, hashing what is stored, and commits it; a failure discards the sink's partial output. */
async function storeFile(path: string, sink: OutputSink, options: ParquetOutputOptions): Promise<WrittenFile & StoredOutput> {
  const digest = new Digest(options.onBytes ?? (() => undefined));
  try {
    await pipeline(createReadStream(path, { highWaterMark: 1 << 20 }), digest, sink.open(), options.signal ? { signal: options.signal } : {});
    const written = { bytes: digest.bytes, sha256: digest.hash.digest('hex') };
    return { ...written, ...(await sink.commit(written)) };
  } catch (err) {
    await discardAfter(err, sink);
    throw err;
  }
}

/**
 * One Parquet output: the COPY's CSV flows through a named pipe into DuckDB, which writes a scratch
 * Parquet file as the rows arrive, and that file is streamed into the sink (a local file or an S3
 * object), counted and hashed as stored, so the receipt's bytes and sha256 are the finished file's.
 * Either side failing stops the other. The scratch folder (./scratch.ts) is removed on every path.
 */
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Client } from 'pg';
import { ErrorCode, PgExtractError, addNote, causes } from '../errors';
import { ByteCount, Digest, copyThrough } from '../postgres/copy-to-output';
import type { ExportFormat } from '../contract/formats';
import { copyOutSql } from '../postgres/export-format';
import type { SourceColumn } from '../contract/source-column';
import type { WrittenFile } from '../contract/file-receipt';
import type { OutputSink, StoredOutput } from '../storage/output-sink';
import { csvToParquet } from './csv-to-parquet';
import { makeFifo, openFifoWhenRead } from './fifo-sink';
import { makeScratch } from './scratch';

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
): Promise<WrittenFile & StoredOutput & { rowCount: () => number }> {
  const scratch = await makeScratch();
  try {
    const csv = join(scratch, 'rows.csv');
    await makeFifo(csv);
    const parquet = join(scratch, 'rows.parquet');
    const copy = async (signal: AbortSignal) => {
      const pipe = await openFifoWhenRead(csv, signal);
      try {
        // The CSV is no file anyone keeps: its bytes are counted for progress, not hashed (a sha256 of them was
        // about 0.1 s of the event loop's time per million bench rows).
        const count = new ByteCount(options.onBytes ?? (() => undefined));
        return await copyThrough(client, copyOutSql(select, format), (source) => [count, pipe.open((chunk) => source.recycle(chunk))], signal);
      } finally {
        pipe.close();
      }
    };
    const [written, copied] = await firstFailureStopsBoth(options.signal, [(signal) => csvToParquet({ csv, parquet, columns, format, scratch, signal }), copy]);
    const rows = copied.rowCount;
    if (written !== rows) throw new PgExtractError(ErrorCode.SOURCE_READ_FAILED, `the Parquet file holds ${written} rows; the COPY sent ${rows}`);
    return { ...(await storeFile(parquet, sink, options)), rowCount: () => rows };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * Runs both sides at once; the first to fail aborts the other (a COPY aborted mid-stream closes its
 * session, as on any abort) and is the error reported, once both have stopped. A broken pipe on the
 * writing side only says the reader stopped: it aborts nothing, and the reader's own error, when it
 * has one, is the one reported.
 */
async function firstFailureStopsBoth<A, B>(
  signal: AbortSignal | undefined,
  [first, second]: [(signal: AbortSignal) => Promise<A>, (signal: AbortSignal) => Promise<B>],
): Promise<[A, B]> {
  const stop = new AbortController();
  const both = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  const failures: unknown[] = [];
  const failed = (error: unknown): never => {
    if (![...causes(error)].some((e) => (e as { code?: unknown }).code === 'EPIPE')) {
      failures.push(error);
      stop.abort();
    }
    throw error;
  };
  const [a, b] = await Promise.allSettled([first(both).catch(failed), second(both).catch(failed)]);
  if (a.status === 'rejected') throw failures.length > 0 ? failures[0] : a.reason;
  if (b.status === 'rejected') throw failures.length > 0 ? failures[0] : b.reason;
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
    await sink.discard().catch((discardErr: unknown) => addNote(err, `partial output removal failed: ${(discardErr as { code?: string }).code ?? 'Error'}`));
    throw err;
  }
}

/**
 * One Parquet output: the COPY's CSV goes to a scratch file, DuckDB turns it into a scratch Parquet
 * file, and that file is streamed into the sink (a local file or an S3 object), counted and hashed
 * as stored, so the receipt's bytes and sha256 are the finished file's. The scratch folder (under
 * the worker's TMPDIR) is removed on every path.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Client } from 'pg';
import { ErrorCode, PgExtractError, addNote } from '../errors';
import { Digest, copyToOutput } from '../postgres/copy-to-output';
import type { ExportFormat } from '../contract/formats';
import { copyOutSql } from '../postgres/export-format';
import type { SourceColumn } from '../contract/extraction-types';
import type { OutputSink, StoredOutput, WrittenFile } from '../storage/output-sink';
import { csvToParquet } from './csv-to-parquet';
import { TempFileSink } from './temp-file-sink';

export interface ParquetOutputOptions {
  /** Called with the CSV bytes read so far, then the Parquet bytes stored (progress only). */
  onBytes?: (bytes: number) => void;
  signal?: AbortSignal;
}

/** Scratch folders are named for the worker's pid, so a crashed worker's leftovers are recognisable. */
export const SCRATCH_PREFIX = `pg-extract-parquet-`;

export async function writeParquet(
  client: Client,
  select: string,
  columns: SourceColumn[],
  format: ExportFormat,
  sink: OutputSink,
  options: ParquetOutputOptions,
): Promise<WrittenFile & StoredOutput & { rowCount: () => number }> {
  const scratch = await mkdtemp(join(tmpdir(), `${SCRATCH_PREFIX}${process.pid}-`));
  try {
    const csv = join(scratch, 'rows.csv');
    const copied = await copyToOutput(client, copyOutSql(select, format), new TempFileSink(csv), { onBytes: options.onBytes, signal: options.signal });
    const rows = copied.rowCount();
    const parquet = join(scratch, 'rows.parquet');
    const written = await csvToParquet({ csv, parquet, columns, format, scratch, signal: options.signal });
    if (written !== rows) throw new PgExtractError(ErrorCode.SOURCE_READ_FAILED, `the Parquet file holds ${written} rows; the COPY sent ${rows}`);
    await rm(csv);
    return { ...(await storeFile(parquet, sink, options)), rowCount: () => rows };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
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

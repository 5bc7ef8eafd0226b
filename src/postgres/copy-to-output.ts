/**
 * Streams `COPY … TO STDOUT` into an output sink (a local file or an S3 object) with backpressure,
 * hashing and counting the bytes as written (after optional compression). The sink makes the output
 * visible only at commit, so a retry rewrites the whole output and a crash never leaves a half
 * one under the final name.
 */
import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Client } from 'pg';
import type { WrittenFile } from '../contract/file-receipt';
import { type OutputSink, type StoredOutput, discardAfter } from '../storage/output-sink';
import { CopyOutStream } from './copy-out-stream';
import { closeSession } from './session';

/** Counts the bytes passing through, reporting the running total (progress). */
export class ByteCount extends Transform {
  bytes = 0;
  constructor(private readonly onBytes: (bytes: number) => void) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    this.onBytes(this.bytes);
    done(null, chunk);
  }
}

/** Hashes and counts the bytes passing through (shared by every source that writes an output). */
export class Digest extends ByteCount {
  readonly hash = createHash('sha256');
  override _transform(chunk: Buffer, enc: BufferEncoding, done: TransformCallback): void {
    this.hash.update(chunk);
    super._transform(chunk, enc, done);
  }
}

/** Options for {@link copyToOutput}. */
export interface CopyToOutputOptions {
  /**
   * Makes the stage compressing the file whole (src/storage/file-compression.ts), given what takes back the COPY's
   * blocks once compressed; absent, or returning undefined, for plain output.
   */
  compress?: ((recycle: (chunk: Buffer) => void) => Transform | undefined) | undefined;
  /** Called with the running byte count; keep it cheap (it runs per chunk). */
  onBytes?: (bytes: number) => void;
  signal?: AbortSignal;
}

/**
 * Runs `copySql` on `client` and writes the stream into `sink`, then commits it, and returns what it
 * wrote with the COPY's row count. The caller owns the transaction. A failure leaves no output (see
 * {@link copyThrough} for the session).
 */
export async function copyToOutput(
  client: Client,
  copySql: string,
  sink: OutputSink,
  options: CopyToOutputOptions,
): Promise<WrittenFile & StoredOutput & { rows: number }> {
  const digest = new Digest(options.onBytes ?? (() => undefined));
  try {
    // Uncompressed, the sink gets the source's own blocks (the digest passes them on), so it can
    // hand each back once written; compressed, the compressor hands them back, and its output is its own.
    const source = await copyThrough(
      client,
      copySql,
      (copy) => {
        const recycle = (chunk: Buffer): void => copy.recycle(chunk);
        const compress = options.compress?.(recycle);
        const writable = sink.open(compress ? undefined : recycle);
        return compress ? [compress, digest, writable] : [digest, writable];
      },
      options.signal,
    );
    const written = { bytes: digest.bytes, sha256: digest.hash.digest('hex') };
    const stored = await sink.commit(written);
    return { ...written, ...stored, rows: source.rowCount };
  } catch (err) {
    // The COPY's failure is the one to report; a partial output left behind is only a note on it.
    await discardAfter(err, sink);
    throw err;
  }
}

/**
 * Runs `copySql` on `client` and pipes the stream through `stages` (the last one writes); returns
 * the COPY stream once its query has ended, so its `rowCount` is the server's `COPY n` (which may
 * reach the client in a later read than the rows' end). If writing fails or is aborted mid-COPY, the session is still in COPY
 * mode and can run nothing else (not even ROLLBACK), so it is closed here; the server then rolls
 * the transaction back.
 */
export async function copyThrough(
  client: Client,
  copySql: string,
  stages: (source: CopyOutStream) => NodeJS.WritableStream[],
  signal: AbortSignal | undefined,
): Promise<CopyOutStream> {
  const source = client.query(new CopyOutStream(copySql));
  try {
    await pipeline([source, ...stages(source)] as unknown as [NodeJS.ReadableStream, NodeJS.WritableStream], signal ? { signal } : {});
    await source.finished;
    return source;
  } catch (err) {
    // Only the server ends the COPY exchange (CopyDone, or its own ErrorResponse); an abort or a
    // failed stage leaves it mid-COPY. The error's class cannot tell which: the pipeline destroys
    // the source with a failed stage's error, and a COPY FROM into a target (stream-load.ts) fails
    // with the target's DatabaseError. Left open mid-COPY, the session would never run the
    // caller's ROLLBACK, and the caller would wait for it forever.
    if (!source.handedBack) await closeSession(client);
    throw err;
  }
}

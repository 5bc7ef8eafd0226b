/**
 * Streams `COPY … TO STDOUT` into a file with backpressure, hashing and counting the bytes as
 * written (after optional gzip). Writes to a temp name that is fsynced as it grows, then renames
 * atomically, so a retry rewrites the whole file and a crash never leaves a half file under the
 * final name.
 */
import { createHash, randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { type Client, DatabaseError } from 'pg';
import { addNote } from '../errors';
import { CopyOutStream } from './copy-out-stream';
import { DurableFileSink } from './durable-file-sink';

/** The file part of a receipt: what was written, byte for byte. */
export interface WrittenFile {
  bytes: number;
  sha256: string;
}

class Digest extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  constructor(private readonly onBytes: (bytes: number) => void) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    this.onBytes(this.bytes);
    done(null, chunk);
  }
}

async function fsyncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Options for {@link copyToFile}. */
export interface CopyToFileOptions {
  gzip: boolean;
  /** Called with the running byte count; keep it cheap (it runs per chunk). */
  onBytes?: (bytes: number) => void;
  signal?: AbortSignal;
  /** The file's mode, whatever the umask. @default 0o600 */
  mode?: number;
}

/**
 * Runs `copySql` on `client` and writes the stream to `path`. The caller owns the transaction;
 * the COPY's row count is on the returned stream once the next query on `client` returns.
 * If writing fails or is aborted mid-COPY, the session is still in COPY mode and can run nothing
 * else (not even ROLLBACK), so it is closed here; the server then rolls the transaction back.
 */
export async function copyToFile(client: Client, copySql: string, path: string, options: CopyToFileOptions): Promise<WrittenFile & { rowCount: () => number }> {
  const temp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const source = client.query(new CopyOutStream(copySql));
  // A server error (ErrorResponse) ends the COPY exchange cleanly; an abort or a write failure
  // destroys the stream (also an 'error') and leaves the protocol mid-COPY.
  let serverFailed = false;
  source.once('error', (err) => (serverFailed = err instanceof DatabaseError));
  const digest = new Digest(options.onBytes ?? (() => undefined));
  // Uncompressed, the sink gets the source's own blocks (the digest passes them on), so it can
  // hand each back once written; gzip's output is its own.
  const sink = new DurableFileSink(temp, { mode: options.mode, ...(options.gzip ? {} : { onWritten: (chunks: Buffer[]) => chunks.forEach((c) => source.recycle(c)) }) });
  try {
    const stages = options.gzip ? [source, createGzip({ level: 1 }), digest, sink] : [source, digest, sink];
    await pipeline(stages as unknown as [NodeJS.ReadableStream, NodeJS.WritableStream], options.signal ? { signal: options.signal } : {});
    await rename(temp, path);
    await fsyncDirectory(dirname(path));
  } catch (err) {
    if (!source.readableEnded && !serverFailed) await client.end().catch(() => undefined);
    // The COPY's failure is the one to report; a temp file left behind is only a note on it.
    await rm(temp, { force: true }).catch((rmErr: unknown) => addNote(err, `temp file removal failed: ${(rmErr as { code?: string }).code ?? 'Error'}`));
    throw err;
  }
  return { bytes: digest.bytes, sha256: digest.hash.digest('hex'), rowCount: () => source.rowCount };
}

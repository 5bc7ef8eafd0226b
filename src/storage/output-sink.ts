/**
 * One output file or object being written. Bytes go into {@link OutputSink.open}'s writable; they
 * become visible under the final name only at {@link OutputSink.commit} (a rename on a local disk,
 * CompleteMultipartUpload on S3), so a retry rewrites and a crash never leaves a half file there.
 */
import type { Writable } from 'node:stream';
import type { WrittenFile } from '../contract/file-receipt';
import { addNote } from '../errors';

/** What the store acknowledged at commit. */
export interface StoredOutput {
  /** Where the output lives, as the manifest lists it: an absolute path or an `s3://` URL. */
  location: string;
  /** The object's ETag on S3; null for a local file. */
  etag: string | null;
}

/** A committed output and what it holds: where it is, its bytes and digest, and its rows. */
export interface CopiedOutput extends StoredOutput, WrittenFile {
  rows: number;
}

export interface OutputSink {
  /** Where the output will live once committed. */
  readonly location: string;
  /**
   * The writable to stream into. `recycle`, when given, receives each chunk once the sink holds it
   * no longer: its bytes are stored, or copied into the sink's own buffers (an S3 part).
   */
  open(recycle?: (chunk: Buffer) => void): Writable;
  /** Makes the output visible under its final name; `written` is what the caller counted and hashed. */
  commit(written: WrittenFile): Promise<StoredOutput>;
  /** Removes every trace: the partial output before commit, the output itself after. Rejects when it could not. */
  discard(): Promise<void>;
}

/**
 * Removes what `sink` wrote once `err` ended its copy (`output`: the committed file; `partial output`:
 * before its commit). `err` stays the failure to report: a removal that fails is only a note on it.
 */
export async function discardAfter(err: unknown, sink: Pick<OutputSink, 'discard'>, what: 'output' | 'partial output' = 'partial output'): Promise<void> {
  await sink.discard().catch((discardErr: unknown) => addNote(err, `${what} removal failed: ${(discardErr as { code?: string }).code ?? 'Error'}`));
}

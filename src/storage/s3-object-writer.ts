/**
 * Streams one object into S3 with a multipart upload (lib-storage), so the object becomes visible
 * only when it is complete: CompleteMultipartUpload (or one PutObject for a small object) is the
 * atomic step. Parts are 64 MiB and uploaded one at a time, so memory stays flat at about one part
 * per writer, and an object can reach 640 GiB (10 000 parts) — 5 MiB parts would stop at 48.8 GiB.
 *
 * Every part carries its SHA-256 (the server rejects a part whose bytes differ); after completion
 * the server's checksum of the whole object is compared with the one computed here from the same
 * bytes, so a receipt's sha256 is of exactly what the bucket holds.
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback, type Writable } from 'node:stream';
import { DeleteObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { ErrorCode, PgExtractError } from '../errors';
import type { OutputSink, StoredOutput, WrittenFile } from './output-sink';
import { s3Failure } from './s3-errors';
import { type S3Location, formatS3Url } from './s3-url';

/** The smallest part size we use: 64 MiB parts let one object grow to 640 GiB. */
export const MIN_PART_SIZE = 64 * 1024 * 1024;

/** Options for {@link S3ObjectWriter}. */
export interface S3ObjectWriterOptions {
  /** @default 64 MiB; smaller values are raised to it. */
  partSize?: number;
}

/** Hashes the bytes in part-sized windows, as S3 composes a multipart object's checksum. */
class PartHashes {
  private readonly parts: Buffer[] = [];
  private current: Hash = createHash('sha256');
  private filled = 0;

  constructor(private readonly partSize: number) {}

  update(chunk: Buffer): void {
    for (let at = 0; at < chunk.length; ) {
      const take = Math.min(chunk.length - at, this.partSize - this.filled);
      this.current.update(at === 0 && take === chunk.length ? chunk : chunk.subarray(at, at + take));
      this.filled += take;
      at += take;
      if (this.filled === this.partSize) this.closePart();
    }
  }

  private closePart(): void {
    this.parts.push(this.current.digest());
    this.current = createHash('sha256');
    this.filled = 0;
  }

  /** The checksum S3 reports: the object's SHA-256 for one part, else sha256(part digests)-N. */
  checksum(whole: string): string {
    if (this.filled > 0 || this.parts.length === 0) this.closePart();
    if (this.parts.length === 1) return Buffer.from(whole, 'hex').toString('base64');
    return `${createHash('sha256').update(Buffer.concat(this.parts)).digest('base64')}-${this.parts.length}`;
  }
}

/** Passes bytes through to the upload and hashes them in part windows on the way. */
class PartHashingStream extends Transform {
  constructor(readonly hashes: PartHashes) {
    super({ highWaterMark: 1 << 20 });
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.hashes.update(chunk);
    done(null, chunk);
  }
}

export class S3ObjectWriter implements OutputSink {
  readonly location: string;
  private readonly writable: Transform;
  private readonly hashes: PartHashes;
  private readonly upload: Upload;
  private readonly done: Promise<unknown>;
  private committed = false;

  constructor(
    private readonly client: S3Client,
    readonly object: S3Location,
    options: S3ObjectWriterOptions = {},
  ) {
    this.location = formatS3Url(object);
    const partSize = Math.max(MIN_PART_SIZE, options.partSize ?? MIN_PART_SIZE);
    this.hashes = new PartHashes(partSize);
    this.writable = new PartHashingStream(this.hashes);
    this.upload = new Upload({
      client,
      params: { Bucket: object.bucket, Key: object.key, Body: this.writable, ChecksumAlgorithm: 'SHA256' },
      partSize,
      queueSize: 1,
      leavePartsOnError: false,
    });
    this.done = this.upload.done();
    // A failed upload stops the writer, so the pipeline feeding it fails too.
    this.done.catch((err: unknown) => this.writable.destroy(s3Failure(err, `upload of ${this.location}`)));
  }

  /** The object's bytes go here, with backpressure (the upload reads one part at a time). */
  open(): Writable {
    return this.writable;
  }

  /**
   * Waits for the upload to complete and checks the server's checksum against `written.sha256`
   * (hex, of every byte written). A mismatch deletes nothing: the caller's discard does that.
   */
  async commit(written: WrittenFile): Promise<StoredOutput> {
    const result = (await this.done.catch((err: unknown) => Promise.reject(s3Failure(err, `upload of ${this.location}`)))) as { ETag?: string };
    this.committed = true;
    const head = await this.client
      .send(new HeadObjectCommand({ Bucket: this.object.bucket, Key: this.object.key, ChecksumMode: 'ENABLED' }))
      .catch((err: unknown) => Promise.reject(s3Failure(err, `checking ${this.location}`)));
    const expected = this.hashes.checksum(written.sha256);
    if (head.ChecksumSHA256 !== undefined && head.ChecksumSHA256 !== expected) {
      throw new PgExtractError(ErrorCode.S3_CHECKSUM_MISMATCH, `${this.location}: the server's checksum ${head.ChecksumSHA256} is not ${expected}`);
    }
    return { location: this.location, etag: (result.ETag ?? head.ETag ?? '').replace(/"/g, '') };
  }

  /** Aborts the upload (its parts are freed) before commit; deletes the object after. */
  async discard(): Promise<void> {
    this.writable.destroy();
    if (!this.committed) {
      await this.upload.abort();
      await this.done.catch(() => undefined);
      return;
    }
    await this.client.send(new DeleteObjectCommand({ Bucket: this.object.bucket, Key: this.object.key })).catch((err: unknown) => Promise.reject(s3Failure(err, `deleting ${this.location}`)));
  }
}

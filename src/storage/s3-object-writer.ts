/**
 * Streams one object into S3 so that it becomes visible only when complete: a multipart upload
 * whose CompleteMultipartUpload is the atomic step (one PutObject for an object smaller than a
 * part). Parts are 64 MiB, so an object can reach 640 GiB (10 000 parts; 5 MiB parts would stop at
 * 48.8 GiB).
 *
 * Why not @aws-sdk/lib-storage's Upload: it gathers each part from the stream's chunks and then
 * concatenates them, so a 64 MiB part costs 128 MiB, and the SDK hashes every part again for its
 * checksum. Measured on 5 M rows with 2 partitions, a worker peaked at 602 MB with it. Here each
 * writer fills one part buffer, allocated once and reused: the bytes are copied once, hashed once
 * (the part's SHA-256 goes with UploadPart, so the server rejects a part whose bytes differ), and
 * the writer holds one part's memory. While a part uploads the writer accepts nothing more, so
 * backpressure reaches the COPY.
 *
 * After completion the server's checksum of the whole object is compared with the one computed
 * here from the same bytes, so a receipt's sha256 is of exactly what the bucket holds.
 */
import { createHash, type Hash } from 'node:crypto';
import { Writable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { ErrorCode, PgExtractError } from '../errors';
import type { WrittenFile } from '../contract/file-receipt';
import type { OutputSink, StoredOutput } from './output-sink';
import { s3Failure } from './s3-errors';
import { type S3Location, formatS3Url } from '../contract/s3-url';

/** The smallest part size we use: 64 MiB parts let one object grow to 640 GiB. */
export const MIN_PART_SIZE = 64 * 1024 * 1024;

/** Options for {@link S3ObjectWriter}. */
export interface S3ObjectWriterOptions {
  /** @default 64 MiB; smaller values are raised to it. */
  partSize?: number;
}

interface UploadedPart {
  PartNumber: number;
  ETag: string;
  ChecksumSHA256: string;
}

/** The Writable side: fills the part buffer and uploads each full part before taking more bytes. */
class MultipartStream extends Writable {
  private part: Buffer | null = null;
  private filled = 0;
  private hash: Hash = createHash('sha256');
  private readonly digests: Buffer[] = [];
  readonly parts: UploadedPart[] = [];
  uploadId: string | null = null;
  etag: string | null = null;
  /** The object exists in the bucket (its PutObject or CompleteMultipartUpload returned). */
  stored = false;

  constructor(
    private readonly client: S3Client,
    private readonly object: S3Location,
    private readonly partSize: number,
  ) {
    super({ highWaterMark: 1 << 20 });
  }

  /**
   * The checksum S3 must report for the bytes written: their SHA-256 (`sha256`, hex, as the caller
   * counted it) for a single-part object, else sha256 of the part digests sent with the parts, -N.
   */
  serverChecksum(sha256: string): string {
    if (this.digests.length === 1) return Buffer.from(sha256, 'hex').toString('base64');
    return `${createHash('sha256').update(Buffer.concat(this.digests)).digest('base64')}-${this.digests.length}`;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.take(chunk).then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.finish().then(() => callback(), callback);
  }

  private async take(chunk: Buffer): Promise<void> {
    for (let at = 0; at < chunk.length;) {
      this.part ??= Buffer.allocUnsafe(this.partSize);
      const n = chunk.copy(this.part, this.filled, at, Math.min(chunk.length, at + this.partSize - this.filled));
      this.hash.update(chunk.subarray(at, at + n));
      this.filled += n;
      at += n;
      if (this.filled === this.partSize) await this.uploadPart();
    }
  }

  /** Closes the current part's digest and returns its bytes (valid until the buffer is reused). */
  private closePart(): { body: Buffer; checksum: string } {
    const digest = this.hash.digest();
    this.digests.push(digest);
    this.hash = createHash('sha256');
    const body = (this.part ?? Buffer.alloc(0)).subarray(0, this.filled);
    this.filled = 0;
    return { body, checksum: digest.toString('base64') };
  }

  private async uploadPart(): Promise<void> {
    const { Bucket, Key } = { Bucket: this.object.bucket, Key: this.object.key };
    this.uploadId ??=
      (await this.send(new CreateMultipartUploadCommand({ Bucket, Key, ChecksumAlgorithm: 'SHA256' }), 'starting the upload of')).UploadId ?? null;
    const { body, checksum } = this.closePart();
    const PartNumber = this.parts.length + 1;
    const sent = await this.send(
      new UploadPartCommand({ Bucket, Key, UploadId: this.uploadId!, PartNumber, Body: body, ContentLength: body.length, ChecksumSHA256: checksum }),
      `uploading part ${PartNumber} of`,
    );
    this.parts.push({ PartNumber, ETag: sent.ETag ?? '', ChecksumSHA256: checksum });
  }

  private async finish(): Promise<void> {
    const { Bucket, Key } = { Bucket: this.object.bucket, Key: this.object.key };
    if (this.uploadId === null) {
      // Smaller than one part: a single PutObject is atomic too.
      const { body, checksum } = this.closePart();
      const put = await this.send(new PutObjectCommand({ Bucket, Key, Body: body, ContentLength: body.length, ChecksumSHA256: checksum }), 'storing');
      this.etag = put.ETag ?? null;
      this.stored = true;
    } else {
      if (this.filled > 0) await this.uploadPart();
      const done = await this.send(
        new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: this.uploadId, MultipartUpload: { Parts: this.parts } }),
        'completing the upload of',
      );
      this.etag = done.ETag ?? null;
      this.stored = true;
    }
    this.part = null;
  }

  /** Sends one request of the upload; a failure carries its stable S3 code and names the object. */
  private send(command: { input: unknown }, what: string): Promise<{ ETag?: string; UploadId?: string }> {
    const sent = this.client.send(command as never) as Promise<{ ETag?: string; UploadId?: string }>;
    return sent.catch((err: unknown) => Promise.reject(s3Failure(err, `${what} ${formatS3Url(this.object)}`)));
  }
}

export class S3ObjectWriter implements OutputSink {
  readonly location: string;
  private readonly stream: MultipartStream;

  constructor(
    private readonly client: S3Client,
    readonly object: S3Location,
    options: S3ObjectWriterOptions = {},
  ) {
    this.location = formatS3Url(object);
    this.stream = new MultipartStream(client, object, Math.max(MIN_PART_SIZE, options.partSize ?? MIN_PART_SIZE));
  }

  /** The object's bytes go here; the writable finishes once the object is complete in the bucket. */
  open(): Writable {
    return this.stream;
  }

  /**
   * Checks the server's checksum of the completed object against the bytes written (`written` is
   * what the caller counted and hashed). A mismatch deletes nothing: the caller's discard does that.
   */
  async commit(written: WrittenFile): Promise<StoredOutput> {
    if (!this.stream.writableFinished) throw new PgExtractError(ErrorCode.S3_REQUEST_FAILED, `${this.location} was not completely written`);
    const head = await this.client
      .send(new HeadObjectCommand({ Bucket: this.object.bucket, Key: this.object.key, ChecksumMode: 'ENABLED' }))
      .catch((err: unknown) => Promise.reject(s3Failure(err, `checking ${this.location}`)));
    const expected = this.stream.serverChecksum(written.sha256);
    if (head.ChecksumSHA256 !== undefined && head.ChecksumSHA256 !== expected) {
      throw new PgExtractError(ErrorCode.S3_CHECKSUM_MISMATCH, `${this.location}: the server's checksum ${head.ChecksumSHA256} is not ${expected}`);
    }
    return { location: this.location, etag: (this.stream.etag ?? head.ETag ?? '').replace(/"/g, '') };
  }

  /** Deletes the object once it is stored; before that, aborts the upload (its parts are freed). */
  async discard(): Promise<void> {
    if (!this.stream.closed) await new Promise((resolve) => this.stream.once('close', resolve).destroy());
    const { bucket: Bucket, key: Key } = this.object;
    if (this.stream.stored) {
      await this.client.send(new DeleteObjectCommand({ Bucket, Key })).catch((err: unknown) => Promise.reject(s3Failure(err, `deleting ${this.location}`)));
    } else if (this.stream.uploadId !== null) {
      await this.client
        .send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: this.stream.uploadId }))
        .catch((err: unknown) => Promise.reject(s3Failure(err, `aborting the upload of ${this.location}`)));
    }
  }
}

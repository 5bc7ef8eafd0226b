/**
 * Streams one object into S3 so that it becomes visible only when complete: a multipart upload
 * whose CompleteMultipartUpload is the atomic step (one PutObject for an object smaller than a
 * part). The bytes go through {@link MultipartStream}: parts start at 5 MiB and grow (see
 * s3-part-sizes), one uploads while the next fills.
 *
 * Why not @aws-sdk/lib-storage's Upload: it gathers each part from the stream's chunks and then
 * concatenates them, so a part costs twice its size, and the SDK hashes every part again for its
 * checksum. Measured on 5 M rows with 2 partitions, a worker peaked at 602 MB with it.
 *
 * After completion the server's checksum of the whole object is compared with the one computed
 * here from the same bytes, so a receipt's sha256 is of exactly what the bucket holds.
 */
import type { Writable } from 'node:stream';
import { AbortMultipartUploadCommand, DeleteObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { ErrorCode, PgExtractError } from '../errors';
import type { WrittenFile } from '../contract/file-receipt';
import type { OutputSink, StoredOutput } from './output-sink';
import { s3Failure } from './s3-errors';
import { isNoSuchUpload } from './s3-objects';
import { MultipartStream } from './s3-multipart-stream';
import type { PartSizeOptions } from './s3-part-sizes';
import { type S3Location, formatS3Url } from '../contract/s3-url';

/** Options for {@link S3ObjectWriter}: the part sizes (tests make small multipart objects with them). */
export type S3ObjectWriterOptions = PartSizeOptions;

export class S3ObjectWriter implements OutputSink {
  readonly location: string;
  private readonly stream: MultipartStream;

  constructor(
    private readonly client: S3Client,
    readonly object: S3Location,
    options: S3ObjectWriterOptions = {},
  ) {
    this.location = formatS3Url(object);
    this.stream = new MultipartStream(client, object, options);
  }

  /** The object's bytes go here; the writable finishes once the object is complete in the bucket. */
  open(recycle?: (chunk: Buffer) => void): Writable {
    this.stream.recycle = recycle ?? null;
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
    // The size is checked whether or not the server keeps checksums (many S3-compatible ones do not).
    if (head.ContentLength !== undefined && head.ContentLength !== written.bytes) {
      throw new PgExtractError(
        ErrorCode.S3_CHECKSUM_MISMATCH,
        `${this.location}: the server stores ${head.ContentLength} bytes, not the ${written.bytes} written`,
      );
    }
    return { location: this.location, etag: (this.stream.etag ?? head.ETag ?? '').replace(/"/g, '') };
  }

  /**
   * Deletes the object once it is stored; before that, aborts the upload (its parts are freed). It
   * waits for the requests in flight first: a part still uploading could outlive an abort. A store
   * sent and not answered (the server may have applied it) gets both: the abort, then the delete.
   */
  async discard(): Promise<void> {
    if (!this.stream.closed) await new Promise((resolve) => this.stream.once('close', resolve).destroy());
    await this.stream.settled();
    const { bucket: Bucket, key: Key } = this.object;
    const { stored, storeSent, uploadId } = this.stream;
    if (!stored && uploadId !== null) {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })).catch((err: unknown) => {
        // An upload that completed, or whose abort was applied and retried, is no longer there: nothing is left to abort.
        if (!isNoSuchUpload(err)) return Promise.reject(s3Failure(err, `aborting the upload of ${this.location}`));
      });
    }
    // Sent covers stored: every store is sent before it can have returned.
    if (storeSent) {
      await this.client.send(new DeleteObjectCommand({ Bucket, Key })).catch((err: unknown) => Promise.reject(s3Failure(err, `deleting ${this.location}`)));
    }
  }
}

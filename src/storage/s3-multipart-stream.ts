/**
 * The writable side of an S3 object: it fills a part buffer and uploads each full part while the
 * next one fills, so the COPY and the upload overlap. At most two part buffers exist (one filling,
 * one uploading) and they are reused part after part; a new one is allocated only when the part
 * size grows (see s3-part-sizes). When the next part is full before the previous one is uploaded,
 * the writer waits, so backpressure still reaches the COPY.
 *
 * Each byte is copied once and hashed once: the part's SHA-256 goes with UploadPart (the server
 * rejects a part whose bytes differ), signs the payload (the SDK would hash every byte again for
 * SigV4) and the part digests give the whole object's checksum. A
 * failed upload destroys the stream at once, even while nothing is being written, and once the
 * stream is destroyed no request starts, so a discard that waits for {@link settled} aborts an
 * upload that nothing adds to any more.
 */
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, PutObjectCommand, type S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { ErrorCode, PgExtractError } from '../errors';
import { freeMemory } from './free-memory';
import { s3Failure } from './s3-errors';
import { type PartSizeOptions, PartSizes, S3_MAX_PARTS } from './s3-part-sizes';
import { type S3Location, formatS3Url } from '../contract/s3-url';

interface UploadedPart {
  PartNumber: number;
  ETag: string;
  ChecksumSHA256: string;
}

/** A closed part: its bytes (valid until its buffer is reused), number and SHA-256. */
interface ClosedPart {
  body: Buffer;
  partNumber: number;
  digest: Buffer;
}

/** A command whose request SigV4 signs with `digest` as the payload's SHA-256 instead of hashing the body again. */
function signedWith<C extends UploadPartCommand | PutObjectCommand>(command: C, digest: Buffer): C {
  const hex = digest.toString('hex');
  (command.middlewareStack as PutObjectCommand['middlewareStack']).add(
    (next) => (args) => {
      (args.request as { headers: Record<string, string> }).headers['x-amz-content-sha256'] = hex;
      return next(args);
    },
    { step: 'build' },
  );
  return command;
}

type Sent = { ETag?: string; UploadId?: string };

export class MultipartStream extends Writable {
  private readonly sizes: PartSizes;
  /** The part being filled (allocated on its first byte), its number and how much of it is filled. */
  private part: Buffer | null = null;
  private partNumber = 1;
  private filled = 0;
  private hash = createHash('sha256');
  /** The buffer of the last part shipped (busy until {@link uploading} settles), then free for reuse. */
  private shipped: Buffer | null = null;
  private free: Buffer | null = null;
  /** The upload of the last part shipped; its failure has already destroyed the stream. */
  private uploading: Promise<void> = Promise.resolve();
  private readonly requests = new Set<Promise<Sent>>();
  private readonly digests: Buffer[] = [];
  private readonly parts: UploadedPart[] = [];
  uploadId: string | null = null;
  etag: string | null = null;
  /** The object exists in the bucket (its PutObject or CompleteMultipartUpload returned). */
  stored = false;
  /** Its PutObject or CompleteMultipartUpload was sent: without an answer, the object may exist or not. */
  storeSent = false;

  /** Gets each chunk written back once its bytes are copied into a part (a COPY's blocks are reused). */
  recycle: ((chunk: Buffer) => void) | null = null;

  private readonly maxParts: number;

  constructor(
    private readonly client: S3Client,
    private readonly object: S3Location,
    options: PartSizeOptions = {},
  ) {
    super({ highWaterMark: 1 << 20 });
    this.sizes = new PartSizes(options);
    this.maxParts = options.maxParts ?? S3_MAX_PARTS;
  }

  /**
   * The checksum S3 must report for the bytes written: their SHA-256 (`sha256`, hex, as the caller
   * counted it) for a PutObject, else sha256 of the part digests sent with the parts, -N.
   */
  serverChecksum(sha256: string): string {
    if (this.uploadId === null) return Buffer.from(sha256, 'hex').toString('base64');
    return `${createHash('sha256').update(Buffer.concat(this.digests)).digest('base64')}-${this.digests.length}`;
  }

  /** Resolves once no request of this upload is in flight (after destroy() none starts again). */
  async settled(): Promise<void> {
    while (this.requests.size > 0) await Promise.allSettled([...this.requests]);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.take(chunk).then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.finish().then(() => callback(), callback);
  }

  private async take(chunk: Buffer): Promise<void> {
    for (let at = 0; at < chunk.length;) {
      if (this.part === null && this.partNumber > this.maxParts) throw this.tooLarge();
      const part = (this.part ??= this.nextBuffer());
      const n = chunk.copy(part, this.filled, at);
      this.hash.update(chunk.subarray(at, at + n));
      this.filled += n;
      at += n;
      if (this.filled === part.length) await this.ship();
    }
    this.recycle?.(chunk);
  }

  /** Bytes past S3's last part: refused as they come, not when the server refuses part 10 001 (or keeps it). */
  private tooLarge(): PgExtractError {
    const bytes = Array.from({ length: this.maxParts }, (_, i) => this.sizes.of(i + 1)).reduce((a, b) => a + b, 0);
    return new PgExtractError(
      ErrorCode.S3_OBJECT_TOO_LARGE,
      `${formatS3Url(this.object)} would be larger than an object of ${this.maxParts} parts (${bytes} bytes), the most one upload holds`,
    );
  }

  /** The buffer for the part about to fill: the free one when it has the part's size. */
  private nextBuffer(): Buffer {
    const size = this.sizes.of(this.partNumber);
    const reused = this.free?.length === size ? this.free : null;
    this.free = null;
    return reused ?? Buffer.allocUnsafe(size);
  }

  /** Waits for the previous part's upload (the backpressure), then starts this part's. */
  private async ship(): Promise<void> {
    await this.uploading;
    this.free = this.shipped;
    const upload = this.uploadPart(this.closePart());
    upload.catch((err: Error) => this.destroy(err));
    this.uploading = upload;
  }

  /** Closes the part being filled: its digest is taken and its buffer becomes the shipped one. */
  private closePart(): ClosedPart {
    const digest = this.hash.digest();
    this.digests.push(digest);
    this.hash = createHash('sha256');
    const body = (this.part ?? Buffer.alloc(0)).subarray(0, this.filled);
    this.shipped = this.part;
    this.part = null;
    this.filled = 0;
    return { body, partNumber: this.partNumber++, digest };
  }

  /** Parts upload one after another, so part 1's upload creates the multipart upload for all. */
  private async uploadPart({ body, partNumber: PartNumber, digest }: ClosedPart): Promise<void> {
    const { bucket: Bucket, key: Key } = this.object;
    this.uploadId ??=
      (await this.send(new CreateMultipartUploadCommand({ Bucket, Key, ChecksumAlgorithm: 'SHA256' }), 'starting the upload of')).UploadId ?? null;
    const ChecksumSHA256 = digest.toString('base64');
    const sent = await this.send(
      signedWith(new UploadPartCommand({ Bucket, Key, UploadId: this.uploadId!, PartNumber, Body: body, ContentLength: body.length, ChecksumSHA256 }), digest),
      `uploading part ${PartNumber} of`,
    );
    this.parts.push({ PartNumber, ETag: sent.ETag ?? '', ChecksumSHA256 });
  }

  private async finish(): Promise<void> {
    await this.uploading;
    // The part buffers (two of 5 MiB or more), freed once every request has returned, not at V8's next mark-compact.
    const buffers = [this.part, this.shipped, this.free];
    const { bucket: Bucket, key: Key } = this.object;
    if (this.partNumber === 1) {
      // Smaller than one part: a single PutObject is atomic too.
      const { body, digest } = this.closePart();
      const put = await this.send(
        signedWith(new PutObjectCommand({ Bucket, Key, Body: body, ContentLength: body.length, ChecksumSHA256: digest.toString('base64') }), digest),
        'storing',
        true,
      );
      this.etag = put.ETag ?? null;
    } else {
      if (this.filled > 0) await this.uploadPart(this.closePart());
      const done = await this.send(
        new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: this.uploadId!, MultipartUpload: { Parts: this.parts } }),
        'completing the upload of',
        true,
      );
      this.etag = done.ETag ?? null;
    }
    this.stored = true;
    this.part = this.shipped = this.free = null;
    for (const buffer of buffers) if (buffer) freeMemory(buffer);
  }

  /**
   * Sends one request of the upload; a failure carries its stable S3 code and names the object.
   * `stores`: the request that makes the object (a PutObject, a CompleteMultipartUpload), which
   * counts as sent only once it is handed to the client: a writer closed before then stored nothing.
   */
  private send(command: { input: unknown }, what: string, stores = false): Promise<Sent> {
    const url = formatS3Url(this.object);
    if (this.destroyed) return Promise.reject(new PgExtractError(ErrorCode.S3_REQUEST_FAILED, `${what} ${url}: the writer was closed`));
    if (stores) this.storeSent = true;
    const sent = (this.client.send(command as never) as Promise<Sent>).catch((err: unknown) => Promise.reject(s3Failure(err, `${what} ${url}`)));
    const forget = (): boolean => this.requests.delete(sent);
    this.requests.add(sent);
    sent.then(forget, forget);
    return sent;
  }
}

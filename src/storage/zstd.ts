/**
 * zstd streams for CSV and binary files (Node 20's zlib has no zstd; @mongodb-js/zstd is libzstd
 * prebuilt per platform and runs on libuv's thread pool, as zlib's gzip does, so compression leaves
 * the main thread free and scales with the partitions of a worker). The writer compresses chunks of
 * about ZSTD_CHUNK_BYTES as concatenated frames, which is valid zstd (`zstd -d`, DuckDB and libzstd
 * read them as one stream); the reader finds each frame's end from its block headers and decompresses
 * frame by frame. Neither holds more than a frame.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { compress, decompress } from '@mongodb-js/zstd';

/** 1 MiB of input per frame: larger frames compressed no better and cost no less (docs/performance.md "Compression"). */
const ZSTD_CHUNK_BYTES = 1 << 20;

/**
 * zstd's level 1: on the bench table's CSV it compresses 1.9× faster than the default level 3 for the
 * same ratio (3.78 against 3.76; level 2: 3.89 at 1.4× the time of level 1; -1: 2.47). Measured in docs/performance.md "Compression".
 * The binding is pinned at 1.2.0: 1.2.2 ignores the level and always compresses at 3.
 */
export const ZSTD_LEVEL = 1;

/** Gathers a stream's chunks until {@link wanted} bytes are buffered, then lets {@link consume} take them (asynchronously, on the thread pool). */
abstract class GatheringTransform extends Transform {
  private pending: Buffer[] = [];
  protected pendingBytes = 0;

  /** How many buffered bytes make {@link consume} worth calling. */
  protected abstract wanted(): number;
  protected abstract consume(): Promise<void>;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes < this.wanted()) return done();
    this.consume().then(() => done(), done);
  }

  /** Everything buffered, as one Buffer (the chunk itself if there is one), and the chunks it was; the buffer is empty afterwards. */
  protected takeBuffered(): { all: Buffer; chunks: Buffer[] } {
    const chunks = this.pending;
    const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    return { all, chunks };
  }

  /** Puts back bytes {@link consume} could not use yet. */
  protected keepBuffered(rest: Buffer): void {
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
  }
}

/**
 * Compresses a byte stream into zstd frames of `chunkBytes` input each, at {@link ZSTD_LEVEL}; an empty
 * input still gives one (empty) frame. `recycle`, when given, gets each input chunk back once its frame
 * is made: a COPY's 1 MiB blocks are reused instead of becoming garbage (see copy-out-stream.ts).
 */
export class ZstdCompress extends GatheringTransform {
  private frames = 0;

  constructor(
    private readonly chunkBytes = ZSTD_CHUNK_BYTES,
    private readonly recycle?: (chunk: Buffer) => void,
  ) {
    super();
  }

  protected wanted(): number {
    return this.chunkBytes;
  }

  override _flush(done: TransformCallback): void {
    if (this.pendingBytes === 0 && this.frames > 0) return done();
    this.consume().then(() => done(), done);
  }

  protected async consume(): Promise<void> {
    const { all, chunks } = this.takeBuffered();
    this.frames += 1;
    const frame = await compress(all, ZSTD_LEVEL);
    if (this.recycle) chunks.forEach(this.recycle);
    this.push(frame);
  }
}

const FRAME_MAGIC = 0xfd2fb528;

/** Where a frame at the start of `buf` ends, or how many bytes are needed to tell. */
type FrameScan = { end: number; skippable: boolean } | { need: number };

/** Walks one frame's header and block headers (RFC 8878 §3.1); throws on bytes that are not zstd. */
function scanFrame(buf: Buffer): FrameScan {
  if (buf.length < 8) return { need: 8 };
  const magic = buf.readUInt32LE(0);
  // Skippable frames (0x184D2A50-5F) carry a length and no content.
  if (magic >>> 4 === 0x184d2a5) {
    const end = 8 + buf.readUInt32LE(4);
    return buf.length < end ? { need: end } : { end, skippable: true };
  }
  if (magic !== FRAME_MAGIC) throw new Error('not zstd data (bad frame magic number)');
  const descriptor = buf[4]!;
  const singleSegment = (descriptor >> 5) & 1;
  const contentSizeBytes = [singleSegment, 2, 4, 8][descriptor >> 6]!;
  const dictionaryBytes = [0, 1, 2, 4][descriptor & 3]!;
  let offset = 5 + (singleSegment ? 0 : 1) + dictionaryBytes + contentSizeBytes;
  for (;;) {
    if (buf.length < offset + 3) return { need: offset + 3 };
    const header = buf.readUIntLE(offset, 3);
    const type = (header >> 1) & 3;
    const size = header >>> 3;
    if (type === 3) throw new Error('not zstd data (reserved block type)');
    offset += 3 + (type === 1 ? 1 : size);
    if (header & 1) break;
  }
  const end = offset + ((descriptor >> 2) & 1 ? 4 : 0);
  return buf.length < end ? { need: end } : { end, skippable: false };
}

/** Decompresses a stream of concatenated zstd frames (and skippable frames), one frame at a time. */
export class ZstdDecompress extends GatheringTransform {
  private need = 8;

  protected wanted(): number {
    return this.need;
  }

  override _flush(done: TransformCallback): void {
    done(this.pendingBytes === 0 ? null : new Error('truncated zstd data (the stream ends inside a frame)'));
  }

  /** Decompresses every whole frame buffered; keeps the partial one. */
  protected async consume(): Promise<void> {
    let buf = this.takeBuffered().all;
    for (;;) {
      const scan = scanFrame(buf);
      if ('need' in scan) {
        this.need = scan.need;
        break;
      }
      if (!scan.skippable) this.push(await decompress(buf.subarray(0, scan.end)));
      buf = buf.subarray(scan.end);
      this.need = 8;
      if (buf.length === 0) break;
    }
    this.keepBuffered(buf);
  }
}

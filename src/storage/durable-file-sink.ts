/**
 * A file Writable that is durable when it finishes: `finish` is emitted only after fsync.
 *
 * Where the file system allows it, the bytes bypass the page cache (O_DIRECT): they are gathered in
 * an aligned buffer (./aligned-memory.ts) and written a whole buffer at a time straight to the
 * device; the last piece is written padded to the alignment, and the file is then cut to its length.
 * Why: the file is written once and read, if at all, by someone else later, and copying it into the
 * page cache was most of a writer's kernel time. On this VM 600 MB in 1 MiB writes cost 0.16–1.1
 * CPU-s through the cache (the most when the host has taken back the memory the cache needs: README
 * "Why one method's time moves") and 0.09 CPU-s direct, the copy into the buffer included; nor does a
 * large extraction push everything else on the machine out of the cache.
 *
 * Where O_DIRECT is refused (EINVAL: a file system without it, such as tmpfs before Linux 6.6), the
 * process has no aligned buffer left or the worker turned it off (PG_EXTRACT_DIRECT_IO=off), it
 * writes through the page cache and starts writeback while
 * the COPY runs: every `syncEveryBytes` an fdatasync in the background (at most one in flight;
 * writes go on meanwhile). A single fsync at the end would find gigabytes of dirty pages the kernel
 * had not begun to write (about 0.25 s per 600 MB here, up to 1.5 s on a slower disk).
 */
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { DIRECT_IO_ALIGNMENT, giveBackAlignedBuffer, takeAlignedBuffer } from './aligned-memory';
import { DEFAULT_FILE_MODE } from './output-root';

/** Options for {@link DurableFileSink}. */
export interface DurableFileSinkOptions {
  /** Write with O_DIRECT where the file system allows it; false: always through the page cache. @default true */
  directIo?: boolean;
  /** Through the page cache: start writeback after this many bytes since the last one. @default 32 MiB */
  syncEveryBytes?: number;
  /** Replace a file of that name (open(2) without O_EXCL). @default false: the file must not exist */
  overwrite?: boolean;
  /** The file's mode, whatever the umask. @default 0o600 */
  mode?: number;
  /** Called with chunks whose bytes are in the file or in the sink's own buffer; the sink holds them no longer. */
  onWritten?: (chunks: Buffer[]) => void;
}

/** O_DIRECT where the platform has it (Linux); 0 elsewhere. */
const O_DIRECT = constants.O_DIRECT ?? 0;

export class DurableFileSink extends Writable {
  private handle: FileHandle | null = null;
  /** The aligned buffer bytes gather in for direct writes; null when writing through the page cache. */
  private direct: Buffer | null = null;
  /** Bytes gathered in {@link direct} and not yet written. */
  private gathered = 0;
  /** Bytes in the file so far. */
  private position = 0;
  private unsynced = 0;
  private backgroundSync: Promise<void> | null = null;
  private backgroundSyncError: unknown = null;
  private readonly syncEveryBytes: number;
  private readonly openFlags: number;
  private readonly mode: number;
  private readonly directIo: boolean;
  private readonly onWritten: (chunks: Buffer[]) => void;

  constructor(
    readonly path: string,
    options: DurableFileSinkOptions = {},
  ) {
    super({ highWaterMark: 1 << 20 });
    this.syncEveryBytes = options.syncEveryBytes ?? 32 << 20;
    this.openFlags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | (options.overwrite ? 0 : constants.O_EXCL);
    this.mode = options.mode ?? DEFAULT_FILE_MODE;
    this.directIo = options.directIo ?? true;
    this.onWritten = options.onWritten ?? (() => undefined);
  }

  override _construct(callback: (error?: Error | null) => void): void {
    this.openFile()
      // open(2) applies the umask; the file's mode must not depend on it.
      .then(() => this.handle!.chmod(this.mode))
      .then(() => callback(), callback);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.writeAll([chunk]).then(() => callback(), callback);
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    this.writeAll(chunks.map((c) => c.chunk)).then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    (this.direct ? this.writeGathered() : this.settleBackgroundSync()).then(() => this.handle!.sync()).then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const handle = this.handle;
    const direct = this.direct;
    this.handle = null;
    this.direct = null;
    // Close only after a background fdatasync on this descriptor has returned; FileHandle.close waits
    // for a write still running, and only then may another file's writes reuse the aligned buffer.
    (this.backgroundSync ?? Promise.resolve())
      .then(() => handle?.close())
      .finally(() => direct && giveBackAlignedBuffer(direct))
      .then(
        () => callback(error),
        (closeError: Error) => callback(error ?? closeError),
      );
  }

  /** Opens the file for direct writes when it can, else through the page cache. */
  private async openFile(): Promise<void> {
    const direct = this.directIo && O_DIRECT !== 0 ? takeAlignedBuffer() : null;
    if (direct) {
      try {
        this.handle = await open(this.path, this.openFlags | O_DIRECT, this.mode);
        this.direct = direct;
        return;
      } catch (err) {
        giveBackAlignedBuffer(direct);
        if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
      }
    }
    this.handle = await open(this.path, this.openFlags, this.mode);
  }

  private async writeAll(buffers: Buffer[]): Promise<void> {
    if (this.direct) return this.gather(buffers);
    if (this.backgroundSyncError) throw this.backgroundSyncError;
    let total = 0;
    for (const b of buffers) total += b.length;
    for (let done = 0; done < total;) {
      // A regular file takes all of it unless the disk fills; then write the rest, which fails with ENOSPC.
      const pending = done === 0 ? buffers : [Buffer.concat(buffers).subarray(done)];
      done += (await this.handle!.writev(pending)).bytesWritten;
    }
    this.onWritten(buffers);
    this.position += total;
    this.unsynced += total;
    if (this.unsynced >= this.syncEveryBytes && !this.backgroundSync) {
      this.unsynced = 0;
      this.backgroundSync = this.handle!.datasync().then(
        () => void (this.backgroundSync = null),
        (err: unknown) => {
          this.backgroundSyncError = err;
          this.backgroundSync = null;
        },
      );
    }
  }

  /** Copies `buffers` into the aligned buffer, writing it each time it fills. */
  private async gather(buffers: Buffer[]): Promise<void> {
    for (const buffer of buffers) {
      for (let at = 0; at < buffer.length;) {
        const direct = this.direct!;
        const n = buffer.copy(direct, this.gathered, at);
        this.gathered += n;
        at += n;
        if (this.gathered === direct.length) await this.writeGathered();
      }
    }
    this.onWritten(buffers);
  }

  /**
   * Writes what is gathered at the file's end. Only the last piece of a file is shorter than the
   * buffer: it is written padded to the alignment, and the file is cut back to its length.
   */
  private async writeGathered(): Promise<void> {
    const direct = this.direct!;
    const length = this.gathered;
    if (length === 0) return;
    const padded = Math.ceil(length / DIRECT_IO_ALIGNMENT) * DIRECT_IO_ALIGNMENT;
    direct.fill(0, length, padded);
    for (let done = 0; done < padded;) {
      done += (await this.handle!.write(direct, done, padded - done, this.position + done)).bytesWritten;
    }
    this.position += length;
    this.gathered = 0;
    if (padded !== length) await this.handle!.truncate(this.position);
  }

  private async settleBackgroundSync(): Promise<void> {
    await this.backgroundSync;
    if (this.backgroundSyncError) throw this.backgroundSyncError;
  }
}

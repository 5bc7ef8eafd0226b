/**
 * A file Writable that is durable when it finishes: `finish` is emitted only after fsync.
 *
 * Where the file system allows it, the bytes bypass the page cache (O_DIRECT): they are gathered in
 * an aligned buffer (./aligned-memory.ts) and written a whole buffer at a time straight to the
 * device; the last piece is written padded to the alignment, and the file is then cut back to its
 * length. Why: the file is written once and read, if at all, by someone else later, and copying it
 * into the page cache was most of a writer's kernel time. On this VM 600 MB in 1 MiB writes cost
 * 0.16–1.12 CPU-s through the cache (the most when the host has taken back the memory the cache
 * needs: docs/performance.md "Why one method's time moves") and 0.08–0.11 CPU-s direct, the copy into the buffer
 * included; nor does a large extraction push everything else on the machine out of the cache.
 *
 * The file is created by an ordinary open (O_EXCL: never someone else's file) and written through a
 * second descriptor opened with O_DIRECT when the first buffer is full. A file that ends before then
 * (a small table's) is one write through the page cache on the first descriptor, with no second
 * open, no padding and no truncate: such a file's cost is its file system calls, each a round trip
 * through libuv's thread pool, and six calls instead of nine (the caller's rename included) took its
 * worker CPU from about 2.0 to 1.2 ms here (a 120 kB file). Where the direct open is refused
 * (EINVAL: a file system without O_DIRECT, such as tmpfs before Linux 6.6) or a direct write is (an
 * alignment beyond 4 KiB), the rest of the file goes through the page cache, still a buffer at a
 * time; where the process has no aligned buffer left or the caller turned direct I/O off
 * (PG_EXTRACT_DIRECT_IO=off, files the built-in loader reads back), the bytes are written as they
 * come. Through the page cache, writeback starts while the COPY runs, an fdatasync in the background
 * every `syncEveryBytes` (at most one in flight; writes go on meanwhile), because a single fsync at
 * the end would find gigabytes of dirty pages the kernel had not begun to write (about 0.25 s per
 * 600 MB here, up to 1.5 s on a slower disk).
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
  /** The descriptor that created the file: chmod, truncate, fsync, and writes through the page cache. */
  private handle: FileHandle | null = null;
  /** A second descriptor of the file, opened with O_DIRECT when the first buffer is full; null until then and when writing through the page cache. */
  private directHandle: FileHandle | null = null;
  /** Whether the O_DIRECT open was made (or refused): it is tried once, at the first full buffer. */
  private directTried = false;
  /** The aligned buffer bytes gather in; null when they are written as they come (see {@link writeAll}). */
  private aligned: Buffer | null = null;
  /** Bytes gathered in {@link aligned} and not yet written. */
  private gathered = 0;
  /** Bytes in the file so far: every write says where it goes. */
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
    this.openFile().then(() => callback(), callback);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.writeAll([chunk]).then(() => callback(), callback);
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    this.writeAll(chunks.map((c) => c.chunk)).then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    (this.aligned ? this.writeGathered() : Promise.resolve())
      .then(() => this.settleBackgroundSync())
      .then(() => this.handle!.sync())
      .then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const handles = [this.directHandle, this.handle];
    const aligned = this.aligned;
    this.handle = this.directHandle = this.aligned = null;
    // FileHandle.close waits for the operations still running on it (a write, a background
    // fdatasync); only once both are closed may another file's writes reuse the aligned buffer.
    void Promise.allSettled(handles.map((h) => h?.close())).then((closes) => {
      if (aligned) giveBackAlignedBuffer(aligned);
      const failed = closes.find((c) => c.status === 'rejected');
      callback(error ?? (failed ? (failed.reason as Error) : null));
    });
  }

  /** Creates the file, and takes an aligned buffer to gather its bytes in when it may write them directly. */
  private async openFile(): Promise<void> {
    this.handle = await open(this.path, this.openFlags, this.mode);
    // open(2) applies the umask; the file's mode must not depend on it.
    await this.handle.chmod(this.mode);
    if (this.directIo && O_DIRECT !== 0) this.aligned = takeAlignedBuffer();
  }

  /** Opens the file a second time for direct writes; where that is refused, it goes on through the page cache. */
  private async openDirect(): Promise<void> {
    this.directTried = true;
    let direct: FileHandle;
    try {
      // O_NOFOLLOW: never a link put in the file's place (its folder is the run's own, which the rename at commit trusts too).
      direct = await open(this.path, constants.O_WRONLY | constants.O_NOFOLLOW | O_DIRECT);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
      return;
    }
    // Destroyed while this opened: _destroy has closed the rest and may have given the buffer back.
    if (this.destroyed) {
      await direct.close();
      throw new Error('the file sink was destroyed while it opened its file for direct writes');
    }
    this.directHandle = direct;
  }

  private async writeAll(buffers: Buffer[]): Promise<void> {
    if (this.aligned) return this.gather(buffers);
    if (this.backgroundSyncError) throw this.backgroundSyncError;
    let total = 0;
    for (const b of buffers) total += b.length;
    const written = (await this.handle!.writev(buffers, this.position)).bytesWritten;
    if (written < total) await writeFully(this.handle!, Buffer.concat(buffers).subarray(written), this.position + written);
    this.onWritten(buffers);
    this.position += total;
    this.startWriteback(total);
  }

  /** Through the page cache: an fdatasync in the background every `syncEveryBytes` written (at most one in flight). */
  private startWriteback(written: number): void {
    this.unsynced += written;
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
        const aligned = this.aligned!;
        const n = buffer.copy(aligned, this.gathered, at);
        this.gathered += n;
        at += n;
        if (this.gathered === aligned.length) await this.writeGathered();
      }
    }
    this.onWritten(buffers);
  }

  /**
   * Writes what is gathered at the file's end. Only a file's last piece is shorter than the buffer:
   * a direct write takes it padded to the alignment, and the file is then cut back to its length.
   */
  private async writeGathered(): Promise<void> {
    const length = this.gathered;
    if (length === 0) return;
    const aligned = this.aligned!;
    if (!this.directTried && length === aligned.length) await this.openDirect();
    if (this.backgroundSyncError) throw this.backgroundSyncError;
    const padded = this.directHandle ? Math.ceil(length / DIRECT_IO_ALIGNMENT) * DIRECT_IO_ALIGNMENT : length;
    aligned.fill(0, length, padded);
    try {
      await writeFully(this.directHandle ?? this.handle!, aligned.subarray(0, padded), this.position);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL' || !this.directHandle) throw err;
      // Refused for its alignment: this piece and the rest go through the page cache.
      const direct = this.directHandle;
      this.directHandle = null;
      await direct.close();
      return this.writeGathered();
    }
    this.position += length;
    this.gathered = 0;
    if (padded !== length) await this.handle!.truncate(this.position);
    if (!this.directHandle) this.startWriteback(length);
  }

  private async settleBackgroundSync(): Promise<void> {
    await this.backgroundSync;
    if (this.backgroundSyncError) throw this.backgroundSyncError;
  }
}

/** Writes all of `bytes` at `position`: a regular file takes it whole unless the disk fills, and then the rest fails with ENOSPC. */
async function writeFully(handle: FileHandle, bytes: Buffer, position: number): Promise<void> {
  for (let done = 0; done < bytes.length;) done += (await handle.write(bytes, done, bytes.length - done, position + done)).bytesWritten;
}

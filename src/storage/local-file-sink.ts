/**
 * An output file on a local disk: written to a temp name beside it (fsynced as it grows, by
 * {@link DurableFileSink}), then renamed into place and the folder fsynced, so the file exists
 * under its name only once complete and durable. A sink of a batch leaves the folder's fsync to
 * the batch, which does it once for all its files before they are reported.
 */
import { randomBytes } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Writable } from 'node:stream';
import { DurableFileSink } from './durable-file-sink';
import type { OutputSink, StoredOutput } from './output-sink';
import { ignoreError } from './ignore-error';

/** Temp names of writers, `<final name>.tmp-<pid>-<8 hex>`: release sweeps them. */
export const TEMP_FILE = /\.tmp-\d+-[0-9a-f]{8}$/;

/** A fresh temp name for `path`, of the form {@link TEMP_FILE} matches. */
export function tempPathFor(path: string): string {
  return `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
}

export async function fsyncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export class LocalFileSink implements OutputSink {
  private readonly temp: string;
  private writable: DurableFileSink | null = null;
  /** The file this sink put in place, once committed: device and inode, and its birth and change times (an inode's number is reused). */
  private committed: string | null = null;

  /**
   * @param mode the file's mode, whatever the umask.
   * @param options.syncFolder whether commit fsyncs the folder (false: the caller does, before reporting the file). @default true
   * @param options.directIo whether the file is written with O_DIRECT where it can be (see {@link DurableFileSink}). @default true
   */
  constructor(
    readonly location: string,
    private readonly mode: number,
    private readonly options: { syncFolder?: boolean; directIo?: boolean } = {},
  ) {
    this.temp = tempPathFor(location);
  }

  open(recycle?: (chunk: Buffer) => void): Writable {
    this.writable = new DurableFileSink(this.temp, {
      mode: this.mode,
      directIo: this.options.directIo ?? true,
      ...(recycle ? { onWritten: (chunks: Buffer[]) => chunks.forEach(recycle) } : {}),
    });
    return this.writable;
  }

  async commit(): Promise<StoredOutput> {
    await rename(this.temp, this.location);
    this.committed = identity(await stat(this.location, { bigint: true }));
    if (this.options.syncFolder ?? true) await fsyncDirectory(dirname(this.location));
    return { location: this.location, etag: null };
  }

  async discard(): Promise<void> {
    // A writer whose open(2) is still pending when the COPY fails would create the temp file after
    // the rm below: wait until it is closed.
    const writable = this.writable;
    if (writable && !writable.closed) await new Promise((resolve) => writable.once('close', resolve).destroy());
    if (!this.committed) return rm(this.temp, { force: true });
    // Only the file this sink committed: a later try of the same partition (this one's heartbeat lost while it ran on)
    // may have committed its own under the name since, and that one is the receipt's.
    const now = await stat(this.location, { bigint: true }).catch(ignoreError('ENOENT'));
    if (now && identity(now) === this.committed) await rm(this.location, { force: true });
  }
}

/** Tells one file from another that took its name, and its inode's number once freed: a retry's new file is born later. */
function identity(file: BigIntStats): string {
  return `${file.dev}:${file.ino}:${file.birthtimeNs}:${file.ctimeNs}`;
}

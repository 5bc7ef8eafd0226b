/**
 * An OutputSink over a scratch file the worker itself reads back (the CSV a Parquet file is made
 * from): no fsync and no rename, since nobody else ever sees it and a crash leaves it to the
 * caller's scratch folder.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import type { OutputSink, StoredOutput } from '../storage/output-sink';

export class TempFileSink implements OutputSink {
  constructor(readonly location: string) {}

  open(): Writable {
    return createWriteStream(this.location, { mode: 0o600, highWaterMark: 1 << 20 });
  }

  async commit(): Promise<StoredOutput> {
    return { location: this.location, etag: null };
  }

  async discard(): Promise<void> {
    await rm(this.location, { force: true });
  }
}

/**
 * The write end of a named pipe that the worker's own DuckDB reads while the COPY writes into it
 * (the CSV a Parquet file is made from): the conversion overlaps the COPY and no scratch CSV is
 * written or read back. The write end is opened only once DuckDB's read end is (see
 * {@link openFifoWhenRead}) and written as a libuv pipe on the event loop, never through the thread
 * pool, where DuckDB's conversions run and could starve the writes they wait for. Closing it is the
 * reader's end of file.
 */
import { execFile } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { Socket } from 'node:net';
import { Writable } from 'node:stream';
import { setTimeout } from 'node:timers/promises';
import { promisify } from 'node:util';

/** How often to look for the reader; DuckDB opens the pipe within milliseconds of starting its COPY. */
const READER_POLL_MS = 5;

/** Creates the named pipe `path` (mode 0600); node has no mkfifo of its own. */
export async function makeFifo(path: string): Promise<void> {
  await promisify(execFile)('mkfifo', ['-m', '600', path]);
}

/**
 * Opens the pipe for writing once a reader has it open. A non-blocking open fails with ENXIO until
 * then; a blocking one would hold a thread-pool thread that the reader's DuckDB may need. Opening
 * earlier would not do either: a reader that opens after the last writer closed waits forever.
 * Aborted, it lets a reader go before it throws (see {@link releaseReader}).
 */
export async function openFifoWhenRead(path: string, signal: AbortSignal, readerSettled: Promise<unknown>): Promise<FifoSink> {
  while (!signal.aborted) {
    const fd = openForWriting(path);
    if (fd !== null) return new FifoSink(fd);
    await setTimeout(READER_POLL_MS);
  }
  await releaseReader(path, readerSettled);
  throw signal.reason;
}

/**
 * A reader that is opening the pipe waits for a writer, and no interrupt reaches it there: the
 * write end is opened and closed once a reader is there, so it reads an empty input and stops, or
 * not at all if the reader finishes without opening it.
 */
async function releaseReader(path: string, readerSettled: Promise<unknown>): Promise<void> {
  let settled = false;
  readerSettled.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!settled) {
    const fd = openForWriting(path);
    if (fd !== null) return closeSync(fd);
    await setTimeout(READER_POLL_MS);
  }
}

/** The write end, or null while no reader has the pipe open. */
function openForWriting(path: string): number | null {
  try {
    return openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENXIO') return null;
    throw err;
  }
}

/**
 * Once the reader has closed its end (EPIPE) or {@link FifoSink.drain} was called, every later block is
 * dropped and the COPY reads on to its end: the reader's own error decides whether that COPY is
 * aborted (a value it refused) or drained to keep its session's transaction for a second read (a
 * row longer than its buffer, ./parquet-output.ts). A reader that stopped early without an error
 * leaves fewer rows in its file than the COPY sent, which its caller checks.
 */
export class FifoSink {
  private readonly pipe: Socket;
  private dropping = false;

  constructor(fd: number) {
    this.pipe = new Socket({ fd, readable: false, writable: true });
  }

  /** Each block goes back to the COPY's reader once the kernel has it, so the COPY reuses a few blocks instead of allocating one per MiB. */
  open(recycle?: (chunk: Buffer) => void): Writable {
    return new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        if (this.dropping) {
          recycle?.(chunk);
          return done();
        }
        this.pipe.write(chunk, (err) => {
          if (err && (this.dropping || (err as NodeJS.ErrnoException).code === 'EPIPE')) {
            this.drain();
            recycle?.(chunk);
            return done();
          }
          if (!err) recycle?.(chunk);
          done(err);
        });
      },
      final: (done) => (this.dropping ? done() : this.pipe.end(done)),
      destroy: (err, done) => {
        this.pipe.destroy();
        done(err);
      },
    });
  }

  /** Closes the pipe and drops whatever is still to be written; the COPY runs on to its end. */
  drain(): void {
    this.dropping = true;
    this.pipe.destroy();
  }

  /** Closes the pipe (idempotent): the reader sees the end of what was written. */
  close(): void {
    this.pipe.destroy();
  }
}

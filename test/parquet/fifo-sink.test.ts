/**
 * The named pipe between a COPY and DuckDB, with `cat` and `head` as its reader: a reader that
 * stops early does not fail the writer (the rest is dropped, so the COPY can run to its end), a
 * drained sink drops what is still queued, and an abort before the writer opened lets a reader
 * blocked in its open go with an empty input instead of leaving it there for good.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { makeFifo, openFifoWhenRead } from '../../src/parquet/fifo-sink';

const MiB = 1 << 20;

/** A reader of `path` that counts what it read (`wc -c`), from `head -c limit` when a limit is given. */
function reader(path: string, limit?: number): { child: ChildProcess; bytes: Promise<number> } {
  const script = limit === undefined ? 'wc -c < "$1"' : 'head -c "$2" "$1" | wc -c';
  const child = spawn('sh', ['-c', script, 'reader', path, String(limit ?? '')], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const bytes = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(Number(out.trim())) : reject(new Error(`reader exited ${code}`))));
  });
  return { child, bytes };
}

const blocks = (n: number) => Readable.from(Array.from({ length: n }, () => Buffer.alloc(MiB, 0x61)));

describe('FIFO sink (named pipe to the Parquet conversion)', () => {
  let dir: string;
  let path: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'pg-extract-fifo-test-'));
    path = join(dir, 'rows.csv');
    await makeFifo(path);
  });
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  for (const [what, written, limit] of [
    ['every block reaches a reader that reads to the end, and each goes back to be reused', 8, undefined],
    ['a reader that stops after 3 MiB does not fail the writer: the rest is dropped and every block still goes back', 64, 3 * MiB],
  ] as const) {
    it(what, async () => {
      const read = reader(path, limit);
      const sink = await openFifoWhenRead(path, new AbortController().signal, read.bytes);
      let recycled = 0;
      await pipeline(
        blocks(written),
        sink.open(() => recycled++),
      );
      sink.close();
      assert.equal(await read.bytes, limit ?? written * MiB);
      assert.equal(recycled, written);
    });
  }

  it('drained while blocks are queued for the pipe: the writer finishes, dropping them', async () => {
    // `sleep` first: the reader takes nothing for a while, so the pipe fills and blocks queue.
    const child = spawn('sh', ['-c', 'exec 3<"$1"; exec sleep 2', 'reader', path], { stdio: 'ignore' });
    try {
      const sink = await openFifoWhenRead(path, new AbortController().signal, new Promise(() => undefined));
      const written = pipeline(blocks(16), sink.open());
      await new Promise((r) => setTimeout(r, 100));
      sink.drain();
      await written;
    } finally {
      child.kill();
    }
  });

  it('aborted before the writer opened: a reader blocked in its open reads an empty input, and the abort is what is thrown', async () => {
    const read = reader(path);
    // The reader's open is blocked: no writer yet. Abort at once, as when the COPY fails before its first row.
    await new Promise((r) => setTimeout(r, 100));
    const stop = new AbortController();
    stop.abort(new Error('stopped'));
    await assert.rejects(openFifoWhenRead(path, stop.signal, read.bytes), /stopped/);
    assert.equal(await read.bytes, 0, 'the reader got end of file');
  });

  it('aborted when no reader comes: it stops once the reader side has settled', async () => {
    const stop = new AbortController();
    stop.abort(new Error('stopped'));
    await assert.rejects(openFifoWhenRead(path, stop.signal, Promise.reject(new Error('reader failed'))), /stopped/);
  });
});

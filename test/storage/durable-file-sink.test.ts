/**
 * DurableFileSink writes every byte (directly or through the page cache), syncs as it goes, refuses
 * to overwrite, and never leaks its descriptor or its aligned buffer.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { ALIGNED_BUFFER_BYTES, MAX_ALIGNED_BUFFERS, giveBackAlignedBuffer, takeAlignedBuffer } from '../../src/storage/aligned-memory';
import { DurableFileSink } from '../../src/storage/durable-file-sink';
import { descriptorsOf, isDirect } from '../support/descriptors';

/** Resolves once `sink` has closed (events.once would reject on the 'error' it emits first). */
const closed = (sink: DurableFileSink): Promise<void> => new Promise((resolve) => (sink.closed ? resolve() : sink.once('close', () => resolve())));

/** Descriptors of this process that point at `path`. */
const openDescriptors = (path: string): string[] => descriptorsOf((target) => target.startsWith(path));

/**
 * Writes `bytes` into `sink` and, while the sink still waits for more, tells whether a descriptor
 * of `path` was opened with O_DIRECT; then ends the stream and waits for it to close.
 */
async function writesDirect(sink: DurableFileSink, path: string, bytes: Buffer): Promise<boolean> {
  // The write's callback runs once the sink has opened the file (and its direct descriptor, once a buffer filled) and taken the bytes.
  await new Promise<void>((resolve, reject) => sink.write(bytes, (err) => (err ? reject(err) : resolve())));
  const direct = openDescriptors(path).some(isDirect);
  sink.end();
  await finished(sink);
  return direct;
}

/** Whether every aligned buffer of the process can be taken, so none is held by a closed sink. */
function everyAlignedBufferFree(): boolean {
  const taken = Array.from({ length: MAX_ALIGNED_BUFFERS }, () => takeAlignedBuffer());
  taken.forEach((b) => b && giveBackAlignedBuffer(b));
  return !taken.includes(null);
}

describe('DurableFileSink', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'pg-extract-sink-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Writes `chunks` through a sink and checks the file holds exactly their bytes, and nothing is left open. */
  async function writesExactly(chunks: Buffer[], options: ConstructorParameters<typeof DurableFileSink>[1] = {}): Promise<void> {
    const path = join(dir, `out-${Math.random().toString(16).slice(2)}.bin`);
    await pipeline(Readable.from(chunks), new DurableFileSink(path, options));
    const expected = Buffer.concat(chunks);
    assert.equal(statSync(path).size, expected.length);
    assert.equal(createHash('sha256').update(readFileSync(path)).digest('hex'), createHash('sha256').update(expected).digest('hex'));
    assert.deepEqual(openDescriptors(path), []);
  }

  // Uneven chunk sizes: pieces straddle the aligned buffer's ends.
  const uneven = (): Buffer[] => Array.from({ length: 300 }, (_, i) => randomBytes(1 + ((i * 7919) % 70_000)));

  it('writes every byte in order, around the aligned buffer and at every kind of last piece', async () => {
    await writesExactly(uneven());
    const A = ALIGNED_BUFFER_BYTES;
    // Under one buffer the file goes through the page cache; past it, direct, its last piece padded or not.
    for (const length of [0, 1, 4095, 4096, 4097, A, A + 1, A + 4095, A + 4096, A + 4097, 3 * A - 512]) {
      await writesExactly(length === 0 ? [] : [randomBytes(length)]);
    }
  });

  it('bypasses the page cache, and gives its aligned buffer back once closed', async () => {
    const path = join(dir, 'direct.bin');
    assert.equal(await writesDirect(new DurableFileSink(path), path, randomBytes(3 << 20)), true);
    assert.deepEqual(openDescriptors(path), []);
    assert.ok(everyAlignedBufferFree());
  });

  it('writes a file shorter than its aligned buffer through the page cache, never opening it direct', async () => {
    // A small table's file: one write on the descriptor that created it, no second open, no padding, no truncate.
    const path = join(dir, 'small.bin');
    const bytes = randomBytes(ALIGNED_BUFFER_BYTES - 4097);
    assert.equal(await writesDirect(new DurableFileSink(path), path, bytes), false);
    assert.ok(readFileSync(path).equals(bytes));
    assert.deepEqual(openDescriptors(path), []);
    assert.ok(everyAlignedBufferFree());
  });

  it('writes every byte in order through the page cache across many background syncs', async () => {
    // A sync threshold small enough that syncs overlap writes.
    await writesExactly(uneven(), { directIo: false, syncEveryBytes: 64 << 10 });
  });

  it('writes through the page cache when no aligned buffer is left', async () => {
    const taken = Array.from({ length: MAX_ALIGNED_BUFFERS }, () => takeAlignedBuffer());
    try {
      assert.equal(takeAlignedBuffer(), null);
      const path = join(dir, 'cached.bin');
      assert.equal(await writesDirect(new DurableFileSink(path), path, randomBytes(3 << 20)), false);
      await writesExactly(uneven());
    } finally {
      taken.forEach((b) => b && giveBackAlignedBuffer(b));
    }
  });

  it('refuses to overwrite an existing file and leaves it as it was', async () => {
    const path = join(dir, 'taken');
    writeFileSync(path, 'keep me');
    await assert.rejects(pipeline(Readable.from([Buffer.from('new')]), new DurableFileSink(path)), { code: 'EEXIST' });
    assert.equal(readFileSync(path, 'utf8'), 'keep me');
  });

  it('fails with ENOSPC when the disk is full, without emitting finish, and closes the descriptor', async () => {
    // /dev/full refuses O_DIRECT (EINVAL), so this also goes through the page cache on the descriptor
    // that opened it; the sink sets its file's mode, here /dev/full's own.
    const sink = new DurableFileSink('/dev/full', { overwrite: true, mode: 0o666 });
    let finished = false;
    sink.on('finish', () => (finished = true));
    await assert.rejects(pipeline(Readable.from([randomBytes(1 << 20)]), sink), { code: 'ENOSPC' });
    assert.equal(finished, false);
    await closed(sink);
    assert.deepEqual(openDescriptors('/dev/full'), []);
  });

  it('closes the descriptor when destroyed mid-stream', async () => {
    const path = join(dir, 'aborted.bin');
    const sink = new DurableFileSink(path);
    const source = new Readable({ read() {} });
    const failed = pipeline(source, sink).then(
      () => null,
      (err: Error) => err,
    );
    source.push(randomBytes(3 << 20));
    await new Promise((r) => setTimeout(r, 20));
    source.destroy(new Error('cancelled'));
    assert.equal((await failed)?.message, 'cancelled');
    await closed(sink);
    assert.deepEqual(openDescriptors(path), []);
    assert.ok(everyAlignedBufferFree());
  });

  it('closes the direct descriptor, and writes nothing, when destroyed while it opens it', async () => {
    const path = join(dir, 'destroyed-opening.bin');
    const sink = new DurableFileSink(path);
    // Once this callback runs the file is open; the next write fills the buffer, which starts the direct open.
    await new Promise<void>((resolve, reject) => sink.write(randomBytes(4096), (err) => (err ? reject(err) : resolve())));
    sink.write(randomBytes(ALIGNED_BUFFER_BYTES - 4096));
    sink.destroy();
    await closed(sink);
    // The open finishes on the thread pool after the close: what it opened must be closed, and the buffer not written from.
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(openDescriptors(path), []);
    assert.equal(statSync(path).size, 0);
    assert.ok(everyAlignedBufferFree());
  });

  it('closes everything when destroyed before its file is open', async () => {
    const path = join(dir, 'never.bin');
    const sink = new DurableFileSink(path);
    sink.destroy();
    await closed(sink);
    assert.deepEqual(openDescriptors(path), []);
    assert.ok(everyAlignedBufferFree());
  });
});

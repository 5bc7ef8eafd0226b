/** DurableFileSink writes every byte, syncs as it goes, refuses to overwrite, and never leaks its descriptor. */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DurableFileSink } from '../../src/storage/durable-file-sink';

/** Resolves once `sink` has closed (events.once would reject on the 'error' it emits first). */
const closed = (sink: DurableFileSink): Promise<void> => new Promise((resolve) => (sink.closed ? resolve() : sink.once('close', () => resolve())));

/** Descriptors of this process that point at `path`. */
function openDescriptors(path: string): string[] {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(path);
    } catch {
      return false;
    }
  });
}

describe('DurableFileSink', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'pg-extract-sink-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes every byte in order across many background syncs, then closes the file', async () => {
    // Uneven chunk sizes, and a sync threshold small enough that syncs overlap writes.
    const chunks = Array.from({ length: 300 }, (_, i) => randomBytes(1 + ((i * 7919) % 70_000)));
    const path = join(dir, 'out.bin');
    const sink = new DurableFileSink(path, { syncEveryBytes: 64 << 10 });
    await pipeline(Readable.from(chunks), sink);
    const expected = Buffer.concat(chunks);
    assert.equal(statSync(path).size, expected.length);
    assert.equal(createHash('sha256').update(readFileSync(path)).digest('hex'), createHash('sha256').update(expected).digest('hex'));
    assert.deepEqual(openDescriptors(path), []);
  });

  it('refuses to overwrite an existing file and leaves it as it was', async () => {
    const path = join(dir, 'taken');
    writeFileSync(path, 'keep me');
    await assert.rejects(pipeline(Readable.from([Buffer.from('new')]), new DurableFileSink(path)), { code: 'EEXIST' });
    assert.equal(readFileSync(path, 'utf8'), 'keep me');
  });

  it('fails with ENOSPC when the disk is full, without emitting finish, and closes the descriptor', async () => {
    const sink = new DurableFileSink('/dev/full', { flags: 'w' });
    let finished = false;
    sink.on('finish', () => (finished = true));
    await assert.rejects(pipeline(Readable.from([randomBytes(1 << 20)]), sink), { code: 'ENOSPC' });
    assert.equal(finished, false);
    await closed(sink);
    assert.deepEqual(openDescriptors('/dev/full'), []);
  });

  it('closes the descriptor when destroyed mid-stream', async () => {
    const path = join(dir, 'aborted.bin');
    const sink = new DurableFileSink(path, { syncEveryBytes: 1 << 10 });
    const source = new Readable({ read() {} });
    const failed = pipeline(source, sink).then(
      () => null,
      (err: Error) => err,
    );
    source.push(randomBytes(1 << 16));
    await new Promise((r) => setTimeout(r, 20));
    source.destroy(new Error('cancelled'));
    assert.equal((await failed)?.message, 'cancelled');
    await closed(sink);
    assert.deepEqual(openDescriptors(path), []);
  });
});

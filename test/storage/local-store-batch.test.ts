/**
 * A local sink batch (a group of small tables' files): each file appears under its name complete,
 * with the bytes written, and the batch refuses a folder that was not prepared here or that leaves
 * the root through a symlink, as a single sink does. Its files bypass the page cache unless the store
 * was made with direct I/O off or the built-in loader reads them back.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { ErrorCode, errorCodeOf } from '../../src/errors';
import { LocalStore } from '../../src/storage/local-store';
import type { OutputSink } from '../../src/storage/output-sink';
import { descriptorsOf, isDirect } from '../support/descriptors';

async function write(sink: OutputSink, text: string): Promise<void> {
  await pipeline(Readable.from([Buffer.from(text)]), sink.open());
  await sink.commit({ bytes: text.length, sha256: '' });
}

describe('LocalStore sink batch', () => {
  let base: string;
  let root: string;
  let store: LocalStore;
  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'pg-extract-batch-'));
    root = join(base, 'root');
    store = new LocalStore(root, 0o600);
    await store.prepareFolder('run', 'owner-1');
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('writes each file under its name, complete, and leaves no temp file', async () => {
    const batch = store.batch();
    for (const i of [0, 1, 2]) await write(await batch.sink(`run/t${i}.part-0000.csv`), `rows of t${i}\n`);
    await batch.sync();
    for (const i of [0, 1, 2]) assert.equal(readFileSync(join(root, 'run', `t${i}.part-0000.csv`), 'utf8'), `rows of t${i}\n`);
    assert.deepEqual(
      readdirSync(join(root, 'run')).filter((f) => f.includes('.tmp-')),
      [],
    );
  });

  it("removes an earlier try's files by their name prefix and returns them, temp files removed but not returned", async () => {
    const batch = store.batch();
    for (const i of [0, 1]) await write(await batch.sink(`run/p.part-0000-batch-0000${i}.csv`), `batch ${i}\n`);
    await write(await batch.sink('run/q.part-0000.csv'), 'another table\n');
    writeFileSync(join(root, 'run', 'p.part-0000-batch-00002.csv.tmp-1-0badcafe'), 'half');
    const removed = await store.removeStartingWith('run/p.part-0000-batch-');
    assert.deepEqual(removed.sort(), [join(root, 'run', 'p.part-0000-batch-00000.csv'), join(root, 'run', 'p.part-0000-batch-00001.csv')]);
    assert.deepEqual(
      readdirSync(join(root, 'run')).filter((f) => !f.startsWith('.')),
      ['q.part-0000.csv'],
    );
  });

  it('refuses a folder not prepared on this disk, for every name in it', async () => {
    const batch = store.batch();
    for (const name of ['elsewhere/a.csv', 'elsewhere/b.csv']) {
      await assert.rejects(batch.sink(name), (err) => errorCodeOf(err) === ErrorCode.OUTPUT_NOT_VISIBLE);
    }
  });

  it('refuses a folder that leaves the root through a symlink', async () => {
    symlinkSync(mkdtempSync(join(base, 'outside-')), join(root, 'escape'));
    await assert.rejects(store.batch().sink('escape/a.csv'), (err) => errorCodeOf(err) === ErrorCode.OUTPUT_PATH_ESCAPES_ROOT);
  });

  /** Whether the file `sink` is writing is open with O_DIRECT, seen while it writes. */
  async function writesDirect(sink: OutputSink): Promise<boolean> {
    const stream = sink.open();
    // The write's callback runs once the file is open (every descriptor the sink makes) and holds the bytes.
    await new Promise<void>((resolve, reject) => stream.write(Buffer.alloc(3 << 20, 1), (err) => (err ? reject(err) : resolve())));
    const direct = descriptorsOf((target) => target.includes('.tmp-')).some(isDirect);
    stream.end();
    await finished(stream);
    await sink.commit({ bytes: 3 << 20, sha256: '' });
    return direct;
  }

  it('writes its files with O_DIRECT, or through the page cache when made with direct I/O off or the file is read back', async () => {
    assert.equal(await writesDirect(await store.sink('run/one.csv')), true);
    assert.equal(await writesDirect(await store.batch().sink('run/two.csv')), true);
    const cached = new LocalStore(root, 0o600, false);
    assert.equal(await writesDirect(await cached.sink('run/three.csv')), false);
    assert.equal(await writesDirect(await cached.batch().sink('run/four.csv')), false);
    // A file the built-in loader reads back at once goes through the page cache, where the loader finds it.
    assert.equal(await writesDirect(await store.sink('run/five.csv', { readBack: true })), false);
    assert.equal(await writesDirect(await store.batch().sink('run/six.csv', { readBack: true })), false);
    for (const name of ['one', 'two', 'three', 'four', 'five', 'six']) assert.equal(readFileSync(join(root, 'run', `${name}.csv`)).length, 3 << 20);
  });
});

/**
 * A committed local file is discarded only while it is still the one its sink put in place: a later try of
 * the same partition may have committed its own under the name (the first try's heartbeat lost while it ran
 * on), and that file is the one the receipt describes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { LocalFileSink } from '../../src/storage/local-file-sink';

async function write(path: string, text: string): Promise<LocalFileSink> {
  const sink = new LocalFileSink(path, 0o600, { directIo: false });
  await pipeline(Readable.from([Buffer.from(text)]), sink.open());
  await sink.commit();
  return sink;
}

describe('LocalFileSink discard after commit', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'pg-extract-sink-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('removes the file it committed', async () => {
    const sink = await write(join(dir, 'part-0000.csv'), 'a\n');
    await sink.discard();
    assert.deepEqual(readdirSync(dir), []);
  });

  it("leaves a later try's file under the same name", async () => {
    const path = join(dir, 'part-0000.csv');
    const zombie = await write(path, 'first try\n');
    await write(path, 'second try\n');
    // Before, the first try's discard (it failed after its commit) deleted the second try's file.
    await zombie.discard();
    assert.equal(readFileSync(path, 'utf8'), 'second try\n');
  });

  it('a file already gone is no failure', async () => {
    const path = join(dir, 'part-0000.csv');
    const sink = await write(path, 'a\n');
    rmSync(path);
    await sink.discard();
  });
});

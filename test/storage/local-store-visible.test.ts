/**
 * Checking a manifest's local files before it is delivered: every file must be there with its
 * receipted size, and a file whose real location leaves the root is refused as a single path is,
 * however many files one check takes (the root is resolved once for all of them).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, errorCodeOf } from '../../src/errors';
import { LocalStore } from '../../src/storage/local-store';

describe('LocalStore checkVisible', () => {
  let base: string;
  let root: string;
  let store: LocalStore;
  const files = Array.from({ length: 50 }, (_, i) => ({ name: `run/t${i}.part-0000.csv`, bytes: 10 + i }));
  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'pg-extract-visible-'));
    root = join(base, 'root');
    store = new LocalStore(root, 0o600);
    await store.prepareFolder('run', 'owner-1');
    for (const f of files) writeFileSync(join(root, f.name), 'x'.repeat(f.bytes));
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('accepts every file there with its receipted size, and an empty list', async () => {
    await store.checkVisible(files);
    await store.checkVisible([]);
  });

  it('refuses a missing file and a file of another size with OUTPUT_NOT_VISIBLE, naming it', async () => {
    rmSync(join(root, files[7]!.name));
    await assert.rejects(store.checkVisible(files), (err) => errorCodeOf(err) === ErrorCode.OUTPUT_NOT_VISIBLE && /t7\.part/.test((err as Error).message));
    writeFileSync(join(root, files[7]!.name), 'x'.repeat(files[7]!.bytes));
    writeFileSync(join(root, files[30]!.name), 'short');
    await assert.rejects(
      store.checkVisible(files),
      (err) => errorCodeOf(err) === ErrorCode.OUTPUT_NOT_VISIBLE && /t30\.part.*5 bytes/.test((err as Error).message),
    );
  });

  it('refuses a file replaced by a symlink that leaves the root, the rest of the list notwithstanding', async () => {
    const outside = join(mkdtempSync(join(base, 'outside-')), 'same-size.csv');
    writeFileSync(outside, 'x'.repeat(files[3]!.bytes));
    rmSync(join(root, files[3]!.name));
    symlinkSync(outside, join(root, files[3]!.name));
    await assert.rejects(store.checkVisible(files), (err) => errorCodeOf(err) === ErrorCode.OUTPUT_PATH_ESCAPES_ROOT);
  });

  it('refuses a name that leaves the root lexically before touching the disk', async () => {
    await assert.rejects(store.checkVisible([{ name: '../elsewhere.csv', bytes: 1 }]), (err) => errorCodeOf(err) === ErrorCode.OUTPUT_PATH_ESCAPES_ROOT);
  });
});

/**
 * Discarding a local attempt folder: every file in it goes (ones no request named too, as a discarded
 * S3 prefix keeps no object); what cannot go stays under the folder's own name with its marker, where a
 * retried release finds and finishes it; and a discard its worker left part-way is finished by the next.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../../src/storage/local-store';

describe('LocalStore discard', () => {
  const owner = 'owner-1';
  let base: string;
  let root: string;
  let store: LocalStore;
  const discard = (folder: string) => store.release({ paths: [`${folder}/part-0000.csv`], sweepFolders: [], discardFolders: [folder] }, owner);
  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'pg-extract-discard-'));
    root = join(base, 'root');
    store = new LocalStore(root, 0o600);
    await store.prepareFolder('run/attempt-1', owner);
    writeFileSync(join(root, 'run/attempt-1/part-0000.csv'), 'a\n');
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('removes a file no request named (a late writer completed it) with the folder and the run folder above it', async () => {
    writeFileSync(join(root, 'run/attempt-1/part-0001.csv'), 'b\n');
    writeFileSync(join(root, 'run/attempt-1/part-0002.csv.tmp-123-0a1b2c3d'), 'partial');
    const report = await discard('run/attempt-1');
    assert.deepEqual(report.failures, []);
    // Before, the unnamed file failed the rmdir (ENOTEMPTY) and stayed in a hidden folder without its marker.
    assert.deepEqual(readdirSync(root), []);
  });

  it('what cannot go stays under the folder with its marker; a retried release finishes it once it can', async () => {
    mkdirSync(join(root, 'run/attempt-1/not-ours'));
    const first = await discard('run/attempt-1');
    assert.deepEqual(
      first.failures.map((f) => f.path),
      [join(root, 'run/attempt-1')],
    );
    assert.deepEqual(readdirSync(join(root, 'run')), ['attempt-1'], 'no hidden folder');
    assert.deepEqual(readdirSync(join(root, 'run/attempt-1')).sort(), ['.pg-extract-run', 'not-ours']);
    rmSync(join(root, 'run/attempt-1/not-ours'), { recursive: true });
    assert.deepEqual((await discard('run/attempt-1')).failures, []);
    assert.deepEqual(readdirSync(root), []);
  });

  it('two releases discarding the folder at once (a retried activity beside its first try) leave nothing, and no folder without its marker', async () => {
    for (let i = 0; i < 20; i++) writeFileSync(join(root, `run/attempt-1/part-${String(i + 1).padStart(4, '0')}.csv`), 'b\n');
    const other = new LocalStore(root, 0o600);
    const reports = await Promise.all([discard('run/attempt-1'), other.release({ paths: [], sweepFolders: [], discardFolders: ['run/attempt-1'] }, owner)]);
    assert.deepEqual(
      reports.flatMap((r) => r.failures),
      [],
    );
    assert.deepEqual(readdirSync(root), []);
  });

  it("a discard whose worker died after renaming the folder away is finished by the next (another run's is left)", async () => {
    renameSync(join(root, 'run/attempt-1'), join(root, 'run/.attempt-1.discarded-0badf00d'));
    await new LocalStore(root, 0o600).prepareFolder('run/attempt-2', 'owner-2');
    renameSync(join(root, 'run/attempt-2'), join(root, 'run/.attempt-1.discarded-0other00'));
    const report = await discard('run/attempt-1');
    assert.deepEqual(report.failures, []);
    assert.deepEqual(readdirSync(join(root, 'run')), ['.attempt-1.discarded-0other00']);
  });
});

/**
 * Releases that cannot do what they are asked, even as root: a file that cannot be deleted, a run
 * folder the release cannot see, a symlink planted to redirect a delete. The receipt says so with a
 * stable code, the outcome stands, and nothing outside the run's own files is deleted.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { access, mkdir, mkdtemp, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult, Manifest } from '../../src/contract/extraction-types';
import { runOutputs } from '../../src/contract/run-outputs';
import { seedMixedTable, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );

describe('cleanup failure (live)', function () {
  this.timeout(60_000);
  let table: string;
  before(async () => {
    table = await seedMixedTable('cleanfail', 3_000);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  /** Starts a run, lets `tamper` act on its manifest, then reports `committed` and returns the receipt. */
  async function commitAfter(request: Omit<ExtractionRequest, 'table'>, tamper: (manifest: Manifest) => Promise<void>) {
    return withWorker(async ({ taskQueue }) => {
      const handle: WorkflowHandle = await startExtraction(live().temporal.client, { table, ...request }, { taskQueue });
      const manifest = await waitForManifest(handle);
      await tamper(manifest);
      const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      assert.equal(receipt.outcome, 'success', 'the outcome is unchanged');
      assert.deepEqual(((await handle.result()) as ExtractionResult).terminalReceipt, receipt);
      return { manifest, receipt };
    });
  }

  it('a file that cannot be deleted → success with cleanupSucceeded false, a stable code, and the file still listed as retained', async () => {
    let stubborn = '';
    const { manifest, receipt } = await commitAfter({ partitions: 3 }, async (m) => {
      // Where the first file was, put a non-empty folder: unlink fails with EISDIR, root or not.
      stubborn = m.files[0]!.path;
      await rm(stubborn);
      await mkdir(join(stubborn, 'evidence'), { recursive: true });
    });
    assert.equal(receipt.cleanupAttempted, true);
    assert.equal(receipt.cleanupSucceeded, false);
    assert.equal(receipt.cleanupErrorCode, 'EISDIR');
    assert.deepEqual(receipt.filesRetained, [stubborn]);
    assert.deepEqual(
      [...receipt.filesDeleted].sort(),
      runOutputs(manifest)
        .filter((p) => p !== stubborn)
        .sort(),
    );
    assert.deepEqual(
      (await readdir(dirname(stubborn))).filter((n) => !n.startsWith('.')),
      [basename(stubborn)],
      'what the receipt calls retained is still there',
    );
  });

  it('a normal release → cleanupSucceeded true, every file deleted', async () => {
    const { manifest, receipt } = await commitAfter({ partitions: 2 }, async () => undefined);
    assert.equal(receipt.cleanupSucceeded, true);
    assert.equal(receipt.cleanupErrorCode, null);
    assert.deepEqual([...receipt.filesDeleted].sort(), runOutputs(manifest).sort());
    for (const f of manifest.files) assert.equal(await exists(f.path), false);
  });

  it('a release that cannot see the run folder (moved away, as on another machine) → cleanupSucceeded false, FILES_NOT_VISIBLE', async () => {
    const away = join(live().outRoot, `away-${randomUUID()}`);
    const { manifest, receipt } = await commitAfter({ partitions: 2 }, (m) => rename(dirname(m.files[0]!.path), away));
    assert.equal(receipt.cleanupSucceeded, false);
    assert.equal(receipt.cleanupErrorCode, 'FILES_NOT_VISIBLE');
    assert.deepEqual(receipt.filesDeleted, []);
    assert.deepEqual([...receipt.filesRetained].sort(), runOutputs(manifest).sort());
    for (const f of manifest.files) assert.equal(await exists(join(away, basename(f.path))), true, 'the files where they were moved are untouched');
  });

  describe('a symlink planted in the run folder cannot redirect a delete', () => {
    let outside: string;
    beforeEach(async () => {
      outside = await mkdtemp(join(tmpdir(), 'pg-extract-outside-'));
    });
    afterEach(async () => rm(outside, { recursive: true, force: true }));

    it('a part file replaced by a symlink to a file outside the root → the outside file stays, OUTPUT_PATH_ESCAPES_ROOT', async () => {
      const precious = join(outside, 'precious.csv');
      await writeFile(precious, 'not yours\n');
      let planted = '';
      const { receipt } = await commitAfter({ partitions: 2 }, async (m) => {
        planted = m.files[0]!.path;
        await rm(planted);
        await symlink(precious, planted);
      });
      assert.equal(receipt.cleanupSucceeded, false);
      assert.equal(receipt.cleanupErrorCode, 'OUTPUT_PATH_ESCAPES_ROOT');
      assert.deepEqual(receipt.filesRetained, [planted]);
      assert.equal(await exists(precious), true);
    });

    it('the attempt folder replaced by a symlink to a folder outside the root → nothing outside is deleted', async () => {
      const moved = join(outside, 'attempt');
      let names: string[] = [];
      const { receipt } = await commitAfter({ partitions: 2 }, async (m) => {
        const folder = dirname(m.files[0]!.path);
        names = m.files.map((f) => basename(f.path));
        await rename(folder, moved);
        await symlink(moved, folder);
      });
      assert.equal(receipt.cleanupSucceeded, false);
      assert.equal(receipt.cleanupErrorCode, 'OUTPUT_PATH_ESCAPES_ROOT');
      assert.deepEqual(receipt.filesDeleted, []);
      for (const name of names) assert.equal(await exists(join(moved, name)), true, `${name} outside the root is untouched`);
    });
  });
});

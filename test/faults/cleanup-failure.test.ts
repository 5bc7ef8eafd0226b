/** A release that really fails (even as root) before success: the receipt says so, the outcome stands. */
import assert from 'node:assert/strict';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/shared/definitions';
import type { ExtractionResult } from '../../src/shared/extraction-types';
import { seedMixedTable, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

describe('cleanup failure (live)', function () {
  this.timeout(60_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('a file that cannot be deleted → success with cleanupSucceeded false, a stable code, and the file still listed as retained', async () => {
    const table = await seedMixedTable('cleanfail', 3_000);
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { table, partitions: 3 }, { taskQueue });
      const manifest = await waitForManifest(handle);
      // Where the first file was, put a non-empty folder: unlink fails with EISDIR, root or not.
      const stubborn = manifest.files[0]!.path;
      await rm(stubborn);
      await mkdir(join(stubborn, 'evidence'), { recursive: true });
      const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      assert.equal(receipt.outcome, 'success', 'the outcome is unchanged');
      assert.equal(receipt.cleanupAttempted, true);
      assert.equal(receipt.cleanupSucceeded, false);
      assert.equal(receipt.cleanupErrorCode, 'EISDIR');
      assert.deepEqual(receipt.filesRetained, [stubborn]);
      assert.deepEqual([...receipt.filesDeleted].sort(), manifest.files.slice(1).map((f) => f.path).sort());
      assert.deepEqual(await readdir(dirname(stubborn)), [basename(stubborn)], 'what the receipt calls retained is still there');
      assert.deepEqual(((await handle.result()) as ExtractionResult).terminalReceipt, receipt);
    });
  });
});

/**
 * Output folders belong to one run: the same --out, a reused workflow id or ids that sanitize
 * alike never make two runs share a folder, overwrite each other's files or delete each other's
 * retained evidence.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { DefaultLogger } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { startExtraction, waitForManifest } from '../../src/client';
import { createCleanupActivities } from '../../src/activities/cleanup';
import { ErrorCode } from '../../src/errors';
import { commitUpdate } from '../../src/contract/definitions';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult, Manifest } from '../../src/contract/extraction-types';
import { admin, seedMixedTable, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';
import { OutputStores } from '../../src/storage/output-stores';

async function sha256(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

/** Every file of `manifest` is on disk with the bytes its receipt names. */
async function assertIntact(manifest: Manifest, what: string): Promise<void> {
  for (const f of manifest.files) assert.equal(await sha256(f.path), f.sha256, `${what}: ${f.name} is the file its receipt names`);
}

describe('output folders (live)', function () {
  this.timeout(120_000);
  let table: string;
  before(async () => {
    table = await seedMixedTable('outf', 5_000);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it("a reused workflow id with the same --out: the second run neither overwrites nor deletes the first's retained files", async () => {
    await withWorker(async ({ client, taskQueue }) => {
      const workflowId = `reuse-${randomUUID()}`;
      const run = async (outcome: 'unknown' | 'committed'): Promise<ExtractionResult> => {
        const handle = await startExtraction(client, { table, partitions: 2, outDir: 'shared-out' }, { taskQueue, workflowId });
        await waitForManifest(handle);
        await handle.executeUpdate(commitUpdate, { args: [{ outcome }] });
        return (await handle.result()) as ExtractionResult;
      };
      const first = await run('unknown');
      assert.equal(first.terminalReceipt.outcome, 'retain_commit_unknown');
      // Different rows, so an overwritten file shows in its checksum.
      await admin().query(`DELETE FROM ${table} WHERE id % 3 = 0`);
      const second = await run('committed');
      assert.equal(second.terminalReceipt.outcome, 'success');
      assert.equal(second.terminalReceipt.cleanupSucceeded, true);
      const firstPaths = new Set(first.manifest.files.map((f) => f.path));
      assert.ok(
        second.manifest.files.every((f) => !firstPaths.has(f.path)),
        'the runs wrote different files',
      );
      assert.ok(
        second.manifest.files.every((f) => f.name.startsWith('shared-out/')),
        '--out is the parent of each run folder',
      );
      await assertIntact(first.manifest, 'the retained run');
    });
  });

  it('ids that sanitize alike (a:b, a_b), run concurrently: separate folders, one success leaves the other intact', async () => {
    await withWorker(async ({ client, taskQueue }) => {
      const base = `alike-${randomUUID()}`;
      const request: ExtractionRequest = { table, partitions: 2 };
      const handles = await Promise.all([`${base}:x`, `${base}_x`].map((workflowId) => startExtraction(client, request, { taskQueue, workflowId })));
      const manifests = await Promise.all(handles.map((h) => waitForManifest(h)));
      const [colon, underscore] = manifests as [Manifest, Manifest];
      const colonPaths = new Set(colon.files.map((f) => f.path));
      assert.ok(
        underscore.files.every((f) => !colonPaths.has(f.path)),
        'no file is shared',
      );
      await assertIntact(colon, 'a:b');
      await assertIntact(underscore, 'a_b');
      const success = await handles[0]!.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      assert.equal(success.cleanupSucceeded, true);
      await handles[1]!.executeUpdate(commitUpdate, { args: [{ outcome: 'unknown' }] });
      await Promise.all(handles.map((h) => h.result()));
      await assertIntact(underscore, "a_b after a:b's success");
    });
  });

  it('prepareOutputFolder refuses a folder another run owns, and lets the owner prepare it again', async () => {
    const prepare = createCleanupActivities({ stores: new OutputStores({ outputRoot: live().outRoot, fileMode: 0o600 }) }).prepareOutputFolder;
    const asRun = (runId: string) => new MockActivityEnvironment({ workflowExecution: { workflowId: 'owned', runId } }, { logger: new DefaultLogger('ERROR') });
    const folder = `owned-${randomUUID()}/attempt-1`;
    await asRun('run-a').run(prepare, folder);
    await assert.rejects(asRun('run-b').run(prepare, folder), (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure, String(err));
      assert.equal(err.type, ErrorCode.OUTPUT_FOLDER_OWNED);
      assert.equal(err.nonRetryable, true);
      return true;
    });
    await asRun('run-a').run(prepare, folder);
  });
});

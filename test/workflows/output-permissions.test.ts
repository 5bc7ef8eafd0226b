/**
 * Extracted data is not world-readable: files 0600 and run folders 0700 whatever the process
 * umask, widened only by the worker's file mode setting.
 */
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import type { Manifest } from '../../src/contract/extraction-types';
import { seedMixedTable, settleSessions } from '../support/database';
import { live } from '../support/services';
import { type TestWorkerOptions, withWorker } from '../support/worker';

const modeOf = async (path: string): Promise<string> => ((await stat(path)).mode & 0o777).toString(8);

/** Runs one extraction under umask 000, returns its manifest once written, and keeps its files. */
async function extractUnderOpenUmask(table: string, options: TestWorkerOptions): Promise<Manifest> {
  const umask = process.umask(0);
  try {
    return await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { table, partitions: 2, gzip: true }, { taskQueue });
      const manifest = await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'unknown' }] });
      await handle.result();
      return manifest;
    }, options);
  } finally {
    process.umask(umask);
  }
}

describe('output permissions (live)', function () {
  this.timeout(60_000);
  let table: string;
  before(async () => {
    table = await seedMixedTable('perm', 2_000);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('by default files are 0600 and the run folders 0700, even under umask 000', async () => {
    const manifest = await extractUnderOpenUmask(table, {});
    for (const f of manifest.files) assert.equal(await modeOf(f.path), '600', f.name);
    const attemptFolder = dirname(manifest.files[0]!.path);
    assert.equal(await modeOf(attemptFolder), '700', 'attempt folder');
    assert.equal(await modeOf(dirname(attemptFolder)), '700', 'run folder');
  });

  it('a worker file mode of 0640 widens files to 0640 and folders to 0750', async () => {
    const manifest = await extractUnderOpenUmask(table, { fileMode: 0o640 });
    for (const f of manifest.files) assert.equal(await modeOf(f.path), '640', f.name);
    assert.equal(await modeOf(dirname(manifest.files[0]!.path)), '750', 'attempt folder');
  });
});

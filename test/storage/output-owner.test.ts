/**
 * The output folder's owner marker: one run claims a folder, another is refused, and the marker is
 * never seen without its owner's name (a marker created empty read as another run's to every retry
 * of a run whose claim was cut off). A claim cut off leaves only a temp file, which releases sweep.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, errorCodeOf } from '../../src/errors';
import { OWNER_MARKER, claimFolder, folderOwner } from '../../src/storage/output-owner';
import { TEMP_FILE } from '../../src/storage/local-file-sink';

describe('output folder owner marker', () => {
  let folder: string;
  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'pg-extract-owner-'));
  });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  it('claims a folder once: the owner may claim it again, another run is refused, and only the marker is left', async () => {
    await claimFolder(folder, 'run-a');
    await claimFolder(folder, 'run-a');
    await assert.rejects(claimFolder(folder, 'run-b'), (err) => errorCodeOf(err) === ErrorCode.OUTPUT_FOLDER_OWNED);
    assert.equal(readFileSync(join(folder, OWNER_MARKER), 'utf8'), 'run-a');
    assert.equal(statSync(join(folder, OWNER_MARKER)).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(folder), [OWNER_MARKER]);
  });

  it('of runs claiming at once, one wins, and a reader meanwhile sees no marker or a whole one, never an empty one', async () => {
    const seen = new Set<string | null>();
    for (let round = 0; round < 30; round++) {
      const dir = join(folder, `round-${round}`);
      mkdirSync(dir);
      let claiming = true;
      const reading = (async () => {
        while (claiming) seen.add(await folderOwner(dir));
      })();
      const claims = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => claimFolder(dir, `run-${i}`)));
      claiming = false;
      await reading;
      const won = claims.flatMap((c, i) => (c.status === 'fulfilled' ? [`run-${i}`] : []));
      assert.equal(won.length, 1, 'one run owns the folder');
      assert.ok(claims.every((c) => c.status === 'fulfilled' || errorCodeOf(c.reason) === ErrorCode.OUTPUT_FOLDER_OWNED));
      assert.equal(await folderOwner(dir), won[0]);
      assert.deepEqual(readdirSync(dir), [OWNER_MARKER]);
    }
    assert.ok(!seen.has(''), `markers seen: ${[...seen].join(', ')}`);
  });

  it('a claim cut off before its marker was linked leaves a temp file, which does not stop the retry and which releases sweep', async () => {
    const draft = `${OWNER_MARKER}.tmp-12345-0badc0de`;
    writeFileSync(join(folder, draft), 'run-a');
    assert.ok(TEMP_FILE.test(draft), 'named as the temp files releases sweep');
    await claimFolder(folder, 'run-a');
    assert.equal(await folderOwner(folder), 'run-a');
  });
});

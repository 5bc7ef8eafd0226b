/**
 * A killed worker cannot remove its Parquet scratch folders; the next worker to start removes the
 * folders of processes that are gone and leaves those of live ones (its own, another worker's).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCRATCH_PREFIX, sweepOrphanedScratch } from '../../src/parquet/scratch';

describe('Parquet scratch folders', () => {
  it('a worker starting removes the folders of dead workers only', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pg-extract-scratch-test-'));
    // A process that has exited: its pid is free (a reuse within these milliseconds would only keep the folder).
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const names = [`${SCRATCH_PREFIX}${dead}-a1b2c3`, `${SCRATCH_PREFIX}${process.pid}-d4e5f6`, `${SCRATCH_PREFIX}1-g7h8i9`, 'unrelated-folder'];
    for (const name of names) await mkdir(join(dir, name, 'inner'), { recursive: true });
    assert.deepEqual(await sweepOrphanedScratch(dir), [names[0]]);
    assert.deepEqual((await readdir(dir)).sort(), names.slice(1).sort(), 'a live pid (ours, pid 1) and other folders stay');
  });
});

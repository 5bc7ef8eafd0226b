/**
 * A killed worker cannot remove its Parquet scratch folders; the next worker to start on the host
 * removes those of processes that are gone and of its own pid's earlier life, and leaves live
 * processes' folders and other hosts' alone. A TMPDIR DuckDB would read as a pattern is refused.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { requirePlainScratchParent, scratchPrefix, sweepOrphanedScratch } from '../../src/parquet/scratch';
import { ErrorCode } from '../../src/errors';

describe('Parquet scratch folders', () => {
  it('a worker starting removes its host’s folders of dead processes and of its own pid, and no others', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pg-extract-scratch-test-'));
    // A process that has exited: its pid is free (a reuse within these milliseconds would only keep the folder).
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const gone = [`${scratchPrefix(dead)}a1b2c3`, `${scratchPrefix()}d4e5f6`];
    const kept = [`${scratchPrefix(1)}g7h8i9`, `${scratchPrefix(dead, `other-${hostname()}`)}j1k2l3`, 'unrelated-folder'];
    try {
      for (const name of [...gone, ...kept]) await mkdir(join(dir, name, 'inner'), { recursive: true });
      assert.deepEqual((await sweepOrphanedScratch(dir)).removed.sort(), gone.sort());
      assert.deepEqual((await readdir(dir)).sort(), kept.sort(), 'a live pid (pid 1), another host and other folders stay');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a TMPDIR with a *, ? or [ in it is refused with INPUT_INVALID naming TMPDIR, before a conversion makes anything', () => {
    for (const dir of ['/tmp/a[b]c', '/tmp/q*', '/tmp/what?']) {
      assert.throws(() => requirePlainScratchParent(dir), { code: ErrorCode.INPUT_INVALID, field: 'TMPDIR' }, dir);
    }
    requirePlainScratchParent('/tmp/plain-dir_1.x');
  });
});

/** copyToOutput's failure path: the COPY's own error is what the caller gets, whatever its cleanup meets. */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { copyToOutput } from '../../src/postgres/copy-to-output';
import { closeSession, openSession } from '../../src/postgres/session';
import { LocalFileSink } from '../../src/storage/local-file-sink';
import { settleSessions } from '../support/database';
import { live } from '../support/services';

describe('copyToOutput cleanup (live PostgreSQL)', () => {
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('a COPY that fails while its temp file cannot be removed reports the COPY error, with the removal failure as a note', async () => {
    const dir = await mkdtemp(join(live().outRoot, 'ctf-'));
    const client = await openSession(live().pg.url, 'whole-copy');
    let blocked = false;
    // Once bytes flow, a non-empty folder takes the temp file's name: removing it fails, root or not.
    const blockTemp = (): void => {
      if (blocked) return;
      blocked = true;
      const temp = readdirSync(dir).find((n) => n.includes('.tmp-'))!;
      unlinkSync(join(dir, temp));
      mkdirSync(join(dir, temp, 'in-the-way'), { recursive: true });
    };
    try {
      await client.query('BEGIN');
      // Division by zero at row 100 000, after about a megabyte has been written.
      const copy = 'COPY (SELECT g, 1 / (100000 - g) FROM generate_series(1, 200000) g) TO STDOUT';
      await assert.rejects(
        copyToOutput(client, copy, new LocalFileSink(join(dir, 'x.csv'), 0o600), { onBytes: blockTemp }),
        (err: Error & { code?: string; notes?: string[] }) => {
          assert.equal(err.code, '22012', String(err));
          assert.equal(blocked, true);
          assert.deepEqual(err.notes, ['partial output removal failed: ERR_FS_EISDIR']);
          return true;
        },
      );
      await client.query('ROLLBACK');
    } finally {
      await closeSession(client);
    }
  });
});

/**
 * A throwaway PostgreSQL cluster that cannot start (its port taken) says why, from the server's
 * log, and leaves no cluster folder behind (it left 39 MB in /tmp and an error without a cause).
 */
import assert from 'node:assert/strict';
import { type AddressInfo, createServer } from 'node:net';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startLocalPostgres } from '../../devenv/postgres-service';

const clusterFolders = (): string[] => readdirSync(tmpdir()).filter((n) => n.startsWith('pg-extract-pg-'));

describe('a throwaway PostgreSQL cluster (live)', function () {
  this.timeout(120_000);

  it('that cannot start says why from its log, and leaves no folder', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    const before = new Set(clusterFolders());
    try {
      await assert.rejects(startLocalPostgres({ port }), new RegExp(`PostgreSQL did not start on port ${port}; its log ends:\\n[^]*could not (bind|create)`));
    } finally {
      taken.close();
    }
    assert.deepEqual(
      clusterFolders().filter((n) => !before.has(n)),
      [],
    );
  });
});

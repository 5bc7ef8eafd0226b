/**
 * The test Temporal dev server starts even when its port is taken between choosing it and the
 * server binding it: the server exits saying so, and the start tries other ports, outside the
 * ephemeral range. Its log goes to a folder of its own, removed once it stops.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Connection } from '@temporalio/client';
import { startDevServer } from '../../devenv/temporal-dev-server';
import { withFirstPortTaken } from '../support/ports';

const logFolders = (): string[] => readdirSync(tmpdir()).filter((n) => n.startsWith('pg-extract-temporal-'));

describe('the test Temporal dev server (live)', function () {
  this.timeout(120_000);

  it('a port taken meanwhile: the server is started again on other ports, outside the ephemeral range, answers, and leaves no log folder', async () => {
    const before = new Set(logFolders());
    await withFirstPortTaken(
      (first, onPortTaken) => startDevServer({ port: first, freePorts: true, onPortTaken }),
      (server) => Number(server.address.split(':')[1]),
      async (server, taken, first) => {
        assert.match(taken.message, new RegExp(`127\\.0\\.0\\.1:${first}: .*address already in use`), "the server's own words");
        const connection = await Connection.connect({ address: server.address });
        await connection.workflowService.getSystemInfo({});
        await connection.close();
      },
    );
    assert.deepEqual(
      logFolders().filter((n) => !before.has(n)),
      [],
      'no log folder of either start is left',
    );
  });
});

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
import { assertOutsideEphemeralRange, holdFreePort } from '../support/ports';

const logFolders = (): string[] => readdirSync(tmpdir()).filter((n) => n.startsWith('pg-extract-temporal-'));

describe('the test Temporal dev server (live)', function () {
  this.timeout(120_000);

  it('a port taken meanwhile: the server is started again on other ports, outside the ephemeral range, answers, and leaves no log folder', async () => {
    const before = new Set(logFolders());
    const held = await holdFreePort();
    const taken: Error[] = [];
    try {
      const server = await startDevServer({ port: held.port, freePorts: true, onPortTaken: (err) => taken.push(err) });
      try {
        assert.equal(taken.length, 1, 'the first ports failed once');
        assert.match(taken[0]!.message, new RegExp(`127\\.0\\.0\\.1:${held.port}: .*address already in use`), "the server's own words");
        const port = Number(server.address.split(':')[1]);
        assert.notEqual(port, held.port);
        assertOutsideEphemeralRange(port);
        const connection = await Connection.connect({ address: server.address });
        await connection.workflowService.getSystemInfo({});
        await connection.close();
      } finally {
        await server.stop();
      }
    } finally {
      held.server.close();
    }
    assert.deepEqual(
      logFolders().filter((n) => !before.has(n)),
      [],
      'no log folder of either start is left',
    );
  });
});

/**
 * The test S3 server starts even when one of its ports is taken between choosing it and weed binding
 * it (an outgoing connection may take any port of the ephemeral range as its own): weed logs the
 * failed bind and may go on running without that listener, so the start tries another set of ports.
 * It leaves nothing in /tmp once stopped.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startS3 } from '../../devenv/s3-service';
import { withFirstPortTaken } from '../support/ports';

/** What weed could leave in the temporary folder: its sockets, its glog files, our data folders. */
const weedLeftovers = (): string[] => readdirSync(tmpdir()).filter((n) => /^(seaweedfs-|weed\.|pg-extract-s3-)/.test(n));

describe('the test S3 server (live)', function () {
  this.timeout(120_000);

  it('a port taken meanwhile: weed is started again on other ports, outside the ephemeral range, serves, and leaves nothing in /tmp', async () => {
    const before = new Set(weedLeftovers());
    const held = await withFirstPortTaken(
      (first, onPortTaken) => startS3({ firstS3Port: first, onPortTaken }),
      (s3) => Number(new URL(s3.env.AWS_ENDPOINT_URL_S3!).port),
      async (s3, taken, first) => {
        assert.match(taken.message, new RegExp(`ports ${first}, `));
        await s3.createBucket('after-a-taken-port');
      },
    );
    assert.deepEqual(
      weedLeftovers().filter((n) => !before.has(n)),
      [],
      'no socket, log or folder of either weed is left',
    );
    assert.equal(existsSync(`/tmp/seaweedfs-s3-${held}.sock`), false);
  });
});

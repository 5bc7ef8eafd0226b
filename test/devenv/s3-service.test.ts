/**
 * The test S3 server starts even when one of its ports is taken between choosing it and weed binding
 * it (an outgoing connection may take any port of the ephemeral range as its own): weed logs the
 * failed bind and may go on running without that listener, so the start tries another set of ports.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { startS3 } from '../../devenv/s3-service';

/** A listener that accepts connections and never answers, as whatever took the port might. */
async function holdFreePort(): Promise<{ port: number; server: Server }> {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('the test S3 server (live)', function () {
  this.timeout(120_000);

  it('a port taken meanwhile: weed is started again on other ports, outside the ephemeral range, and serves', async () => {
    const held = await holdFreePort();
    const others = await Promise.all([holdFreePort(), holdFreePort(), holdFreePort()]);
    // The other three are free again before weed starts: only the S3 port is taken.
    const [master, volume, filer] = others.map((o) => o.port) as [number, number, number];
    await Promise.all(others.map((o) => new Promise((resolve) => o.server.close(resolve))));
    try {
      const s3 = await startS3({ firstPorts: [held.port, master, volume, filer] });
      try {
        const port = Number(new URL(s3.env.AWS_ENDPOINT_URL_S3!).port);
        assert.notEqual(port, held.port);
        const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
        assert.ok(port < low! || port > high!, `port ${port} is outside the ephemeral range ${low}-${high}`);
        await s3.createBucket('after-a-taken-port');
      } finally {
        await s3.stop();
      }
    } finally {
      held.server.close();
    }
  });
});

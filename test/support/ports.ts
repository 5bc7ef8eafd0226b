/**
 * The devenv servers' port tests (test/devenv/): a server started with its first port held by a
 * listener that accepts connections and never answers, as whatever took the port meanwhile might.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';

async function holdFreePort(): Promise<{ port: number; server: Server }> {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

/** Read here from the kernel, not through the code under test. */
function assertOutsideEphemeralRange(port: number): void {
  const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  assert.ok(port < low! || port > high!, `port ${port} is outside the ephemeral range ${low}-${high}`);
}

/**
 * Starts a server whose first port is taken: asserts that one start failed on it and that the server
 * came up on another port, outside the ephemeral range; then runs `check` (given the failed start's
 * error), stops the server and lets the port go. Returns the held port.
 */
export async function withFirstPortTaken<S extends { stop(): Promise<void> }>(
  start: (first: number, onPortTaken: (error: Error) => void) => Promise<S>,
  portOf: (server: S) => number,
  check: (server: S, taken: Error, held: number) => Promise<void>,
): Promise<number> {
  const held = await holdFreePort();
  const taken: Error[] = [];
  try {
    const server = await start(held.port, (err) => taken.push(err));
    try {
      assert.equal(taken.length, 1, 'the first start failed once');
      const port = portOf(server);
      assert.notEqual(port, held.port);
      assertOutsideEphemeralRange(port);
      await check(server, taken[0]!, held.port);
    } finally {
      await server.stop();
    }
  } finally {
    held.server.close();
  }
  return held.port;
}

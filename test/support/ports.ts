/** Ports for the tests of the servers a run starts (test/devenv/): one held as if taken meanwhile, and the kernel's own range. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';

/** A free port held by a listener that accepts connections and never answers, as whatever took the port might. */
export async function holdFreePort(): Promise<{ port: number; server: Server }> {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

/** Read here from the kernel, not through the code under test. */
export function assertOutsideEphemeralRange(port: number): void {
  const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  assert.ok(port < low! || port > high!, `port ${port} is outside the ephemeral range ${low}-${high}`);
}

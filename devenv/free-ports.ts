/**
 * Free TCP ports for the servers tests and the bench start, chosen outside the kernel's ephemeral
 * range when it leaves room: between choosing a port and a server binding it, any outgoing
 * connection on the machine may take a free port of that range as its own local port (a Temporal
 * dev server starting makes hundreds). A server that still finds a port taken is started again on
 * others ({@link startOnFreePorts}: s3-service.ts, temporal-dev-server.ts).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Ports come from here: above the well-known ones, and low enough for weed's gRPC twins (port + 10000). */
const LOWEST_PORT = 10_000;
const HIGHEST_PORT = 55_535;

export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The kernel's ephemeral port range, from which every outgoing connection takes its local port. */
export function ephemeralPorts(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // Not Linux: assume IANA's range.
  }
  return [49152, 65535];
}

export interface FreePortOptions {
  /** Each port's twin (port + twin) must be free and outside the range too (weed's gRPC listeners: 10000). */
  twin?: number;
  /** Ports already chosen, with their twins. */
  exclude?: number[];
}

/**
 * `count` free ports in 10000–55535, none of them (or their twins) in the ephemeral range when that
 * leaves at least 100 candidates; a range that leaves almost nothing outside it (`1024 65535`) leaves
 * the race to the caller's retry.
 */
export async function freePortsOutsideEphemeral(count: number, { twin, exclude = [] }: FreePortOptions = {}): Promise<number[]> {
  const [low, high] = ephemeralPorts();
  const outsideRange = (p: number): boolean => p < low || p > high;
  const all = Array.from({ length: HIGHEST_PORT - LOWEST_PORT + 1 }, (_, i) => LOWEST_PORT + i);
  const outside = all.filter((p) => outsideRange(p) && (twin === undefined || outsideRange(p + twin)));
  const candidates = outside.length >= 100 ? outside : all;
  const ports: number[] = [];
  const pairs = (p: number): number[] => (twin === undefined ? [p] : [p, p + twin]);
  const taken = (p: number): boolean => [...exclude, ...ports].flatMap(pairs).some((q) => pairs(p).includes(q));
  for (let tries = 0; ports.length < count; tries++) {
    if (tries > 1000) throw new Error(`found no ${count} free ports${twin ? ` (each with port + ${twin} free)` : ''} in ${LOWEST_PORT}-${HIGHEST_PORT}`);
    const p = candidates[Math.floor(Math.random() * candidates.length)]!;
    if (!taken(p) && (await portFree(p)) && (twin === undefined || (await portFree(p + twin)))) ports.push(p);
  }
  return ports;
}

/** A port was taken between choosing it and the server binding it; other ports may do. */
export class PortTaken extends Error {
  override readonly name = 'PortTaken';
}

export interface StartOnFreePortsOptions extends FreePortOptions {
  /** The first port of the first start (tests: a port taken meanwhile); the rest, and every later start's, are chosen. */
  first?: number | undefined;
  /** Called with the error when a start fails with {@link PortTaken}, before the next ports are tried. */
  onPortTaken?: ((error: Error) => void) | undefined;
}

/**
 * Starts a server on `count` free ports ({@link freePortsOutsideEphemeral}), and on other ones when
 * the start throws {@link PortTaken}, up to three starts in all.
 */
export async function startOnFreePorts<T>(count: number, start: (ports: number[]) => Promise<T>, options: StartOnFreePortsOptions = {}): Promise<T> {
  const { first, onPortTaken, ...choice } = options;
  for (let attempt = 1; ; attempt++) {
    const ports =
      attempt === 1 && first !== undefined
        ? [first, ...(await freePortsOutsideEphemeral(count - 1, { ...choice, exclude: [...(choice.exclude ?? []), first] }))]
        : await freePortsOutsideEphemeral(count, choice);
    try {
      return await start(ports);
    } catch (err) {
      if (!(err instanceof PortTaken) || attempt >= 3) throw err;
      onPortTaken?.(err);
    }
  }
}

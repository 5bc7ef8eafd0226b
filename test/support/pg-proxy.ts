/** A TCP proxy in front of a PostgreSQL server, for tests that hold back or cut what crosses the wire. */
import { type AddressInfo, type Socket, connect, createServer } from 'node:net';

export interface PgProxy {
  port: number;
  close(): Promise<void>;
}

/** Listens on a free port; each client's socket and its own connection to the server at `port` are joined by `wire`. */
export async function pgProxy(port: number, wire: (client: Socket, upstream: Socket) => void): Promise<PgProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    wire(client, upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * Forwards to the server at `port`. A session opened after one has sent its `ACCESS SHARE` lock (the
 * coordinator's) waits to be connected until {@link open}: the test can queue a lock request behind
 * the coordinator's before the ranges ask for theirs.
 */
export async function afterLockGate(port: number): Promise<PgProxy & { open(): void }> {
  let locked = false;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const proxy = await pgProxy(port, (client, upstream) => {
    const join = (): void => {
      client.on('data', (chunk: Buffer) => void (chunk.includes('IN ACCESS SHARE MODE') && (locked = true)));
      client.pipe(upstream);
      upstream.pipe(client);
    };
    if (!locked) return join();
    client.pause();
    void opened.then(join);
  });
  return { ...proxy, open };
}

/**
 * A server that accepts connections and never answers (a hung database, a proxy with no backend to
 * give): it reads and drops what a client sends, so it sees the client's close, and counts what it accepted.
 */
import { type AddressInfo, type Server, type Socket, createServer } from 'node:net';

export interface SilentServer {
  /** Connections accepted so far. */
  readonly accepted: () => number;
  /** Connections still open. */
  readonly open: () => number;
  /** The TCP port (for a server listening on a port). */
  readonly port: () => number;
  /** Ends what is still open and stops listening. */
  close(): Promise<void>;
}

/** Listens on a free port of 127.0.0.1, or on the Unix socket at `socketPath`. */
export async function silentServer(socketPath?: string): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.resume();
    // A client that resets the connection is what a test may expect, not a failure of the server.
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (socketPath === undefined) server.listen(0, '127.0.0.1', resolve);
    else server.listen(socketPath, resolve);
  });
  return {
    accepted: () => accepted,
    open: () => sockets.size,
    port: () => (server.address() as AddressInfo).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

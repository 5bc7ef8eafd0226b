/**
 * The socket of a plain (non-TLS) session: every read lands in one buffer the socket keeps
 * (net.Socket's `onread`) instead of a fresh Buffer per read. A COPY's rows are most of what a
 * worker reads, and a fresh read Buffer is external memory that V8 counts against its
 * old-generation limit until a scavenge frees it: on a set's 8 lanes the reads outran the
 * scavenges by tens of MB, and the worker ran a mark-compact about every 100 ms of copying.
 *
 * While a COPY reader has taken the reads ({@link takeReads}) each read goes to it, to be used up
 * before it returns; otherwise a copy of each read is pushed to the socket's readable side, as
 * without `onread`, for pg (whose parser may keep a read past the call) or any stream reader.
 */
import { type OnReadOpts, Socket, type SocketConstructorOpts } from 'node:net';
import type { Duplex } from 'node:stream';

/** The most one read brings: node's own read size. 256 KiB made no difference to the worker's CPU on 5 M rows, and every session has one. */
const READ_BYTES = 64 * 1024;

/** Uses up `data` before it returns; false stops reading until the socket is resumed. */
export type ReadTaker = (data: Buffer) => boolean;

const takers = new WeakMap<Duplex, { take: ReadTaker | null }>();

export function reusedReadSocket(): Socket {
  const state: { take: ReadTaker | null } = { take: null };
  const onread: OnReadOpts = {
    buffer: Buffer.allocUnsafeSlow(READ_BYTES),
    callback: (bytes, buffer) => {
      const data = (buffer as Buffer).subarray(0, bytes);
      if (state.take) return state.take(data);
      // What the socket does without `onread`, on a copy: a stream's reader (pg, pg-copy-streams) may keep it.
      return socket.push(Buffer.from(data));
    },
  };
  // The constructor takes `onread` as net.connect() does; @types/node lists it for connect() only.
  const socket = new Socket({ onread } as SocketConstructorOpts);
  takers.set(socket, state);
  return socket;
}

/**
 * Sends `socket`'s reads to `take` until {@link releaseReads}. False if the socket is not a
 * {@link reusedReadSocket} (a TLS session's): the caller then reads it as a stream.
 */
export function takeReads(socket: Duplex, take: ReadTaker): boolean {
  const state = takers.get(socket);
  if (!state) return false;
  state.take = take;
  return true;
}

/** Sends `socket`'s reads to pg again. */
export function releaseReads(socket: Duplex): void {
  const state = takers.get(socket);
  if (state) state.take = null;
}

/**
 * A `COPY … TO STDOUT` reader for node-postgres that yields the payload bytes of the CopyData
 * messages in large chunks. It follows pg-copy-streams' way of taking over the connection (the
 * same submittable contract, the same hand-back to pg on CopyDone or ErrorResponse) but decodes
 * each socket read in place: the server sends one CopyData message per row, and pg-copy-streams'
 * per-message buffer list was the worker's hottest code in `npm run bench` profiles (a slice,
 * an allocation and a copy for every row). Here the 5-byte headers are squeezed out of each read
 * buffer with `copyWithin`, reads are gathered into 1 MiB blocks, and backpressure pauses the socket.
 * A plain session's socket hands each read straight to the decoder in the one buffer it reads
 * into ({@link takeReads}); a TLS session's reads are pulled from the stream, a Buffer per read.
 * A consumer that is done with a block's bytes may hand it back ({@link CopyOutStream.recycle}) to
 * the process's pool (./block-pool.ts), which serves every later COPY of the process, not just this one.
 */
import { Readable } from 'node:stream';
import type { Connection, Submittable } from 'pg';
import { BLOCK, blockPool } from './block-pool';
import { releaseReads, takeReads } from './reused-read-socket';

const COPY_DATA = 0x64; // 'd'
const COPY_DONE = 0x63; // 'c'
const ERROR_RESPONSE = 0x45; // 'E'
/** NoticeResponse, ParameterStatus, NotificationResponse and CopyOutResponse may come mid-COPY. */
const PASSED_OVER = new Set([0x4e, 0x53, 0x41, 0x48]);
const HEADER = 5;

type DataHandler = (chunk: Buffer) => void;

/** Pass to `client.query()`; read the payload from it. Relies on pg's `connection.stream` as pg-copy-streams does. */
export class CopyOutStream extends Readable implements Submittable {
  /** Rows the server reported in CommandComplete; valid once the query has finished. */
  rowCount = 0;
  private settle: { resolve: (rows: number) => void; reject: (err: Error) => void } | null = null;
  /**
   * Settles when pg hands the query back: with {@link rowCount} at ReadyForQuery, or with the server's
   * or the connection's error. The stream ends at CopyDone, and `COPY n` may come in a later read.
   */
  readonly finished: Promise<number> = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
  /**
   * Bytes of the longest CopyData message so far: the longest row's text with its line end, as the
   * server sends one message per row. Known from a message's header, before any of its payload is pushed.
   */
  longestRow = 0;
  /**
   * Whether the server ended the COPY (CopyDone, or its ErrorResponse) and pg has the connection
   * back: the session then runs its next statement once pg has read the rest. Until then it is
   * mid-COPY, whatever destroyed this stream.
   */
  handedBack = false;
  private connection: Connection | null = null;
  private pgDataHandler: DataHandler | null = null;
  /** Payload bytes still to come of the CopyData message that straddles reads. */
  private dataLeft = 0;
  /** Bytes still to skip of a non-data message that straddles reads. */
  private skipLeft = 0;
  /** A header split across reads. */
  private carry: Buffer | null = null;
  /** The block being filled, taken when the first payload arrives (an empty COPY takes none). */
  private block: Buffer | null = null;
  private blockLength = 0;
  /** Memory of the blocks pushed and not yet recycled: only these may come back. */
  private readonly outstanding = new WeakSet<ArrayBufferLike>();
  private wantsData = false;
  /** Whether the session's socket hands each read to {@link decode} (see reused-read-socket.ts); else the reads are pulled from the stream. */
  private takesReads = false;
  private forwarding = false;
  private readonly onReadable = (): void => this.forward();

  constructor(private readonly text: string) {
    super({ highWaterMark: 2 * BLOCK });
    // Awaited once the rows have ended (copy-to-output.ts copyThrough); a failure before then is the stream's to report.
    this.finished.catch(() => undefined);
  }

  /** Called by pg's client when the query is dequeued. */
  submit(connection: Connection): void {
    this.connection = connection;
    const stream = connection.stream;
    const listeners = stream.listeners('data') as DataHandler[];
    if (listeners.length !== 1) throw new Error('expected exactly one data listener on the pg connection');
    this.pgDataHandler = listeners[0]!;
    this.takesReads = takeReads(stream, (data) => (this.wantsData = this.decode(data)));
    if (!this.takesReads) {
      stream.removeListener('data', this.pgDataHandler);
      stream.pause();
      stream.on('readable', this.onReadable);
    }
    connection.query(this.text);
  }

  override _read(): void {
    this.wantsData = true;
    if (this.takesReads) this.connection?.stream.resume();
    else this.forward();
  }

  private forward(): void {
    if (this.forwarding || !this.wantsData || !this.connection) return;
    this.forwarding = true;
    let chunk: Buffer | null;
    while (this.connection && this.wantsData && (chunk = this.connection.stream.read() as Buffer | null) !== null) {
      this.wantsData = this.decode(chunk);
    }
    this.forwarding = false;
  }

  /**
   * Decodes one read; returns whether downstream wants more. A header split across reads is
   * completed from this read's first bytes rather than by joining the two reads: a join copied the
   * whole 64 kB read every few reads (about 19 MB per 200-table run, every byte of it garbage).
   */
  private decode(input: Buffer): boolean {
    const carry = this.carry;
    if (carry === null) return this.decodeFrom(input, 0);
    this.carry = null;
    const need = HEADER - carry.length;
    const code = carry[0]!;
    // Rare: the header is still incomplete, or it is the COPY's last message, which hands the rest of the read back to pg.
    if (input.length < need || (code !== COPY_DATA && !PASSED_OVER.has(code))) return this.decodeFrom(Buffer.concat([carry, input]), 0);
    const byte = (i: number): number => (i < carry.length ? carry[i]! : input[i - carry.length]!);
    const body = byte(1) * 2 ** 24 + (byte(2) << 16) + (byte(3) << 8) + byte(4) - 4;
    if (code === COPY_DATA) this.startData(body);
    else this.skipLeft = body;
    return this.decodeFrom(input, need);
  }

  private startData(body: number): void {
    this.dataLeft = body;
    if (body > this.longestRow) this.longestRow = body;
  }

  /** Decodes `buf` from `read` on, squeezing the payload to its front. */
  private decodeFrom(buf: Buffer, start: number): boolean {
    let read = start;
    let write = 0;
    const end = buf.length;
    while (read < end) {
      if (this.dataLeft > 0) {
        const n = Math.min(this.dataLeft, end - read);
        if (write !== read) buf.copyWithin(write, read, read + n);
        write += n;
        read += n;
        this.dataLeft -= n;
        continue;
      }
      if (this.skipLeft > 0) {
        const n = Math.min(this.skipLeft, end - read);
        read += n;
        this.skipLeft -= n;
        continue;
      }
      const code = buf[read]!;
      if (code === ERROR_RESPONSE) return this.handBack(buf.subarray(read), buf.subarray(0, write), false);
      if (end - read < HEADER) {
        this.carry = Buffer.from(buf.subarray(read));
        break;
      }
      const body = buf.readUInt32BE(read + 1) - 4;
      read += HEADER;
      if (code === COPY_DATA) this.startData(body);
      else if (code === COPY_DONE) return this.handBack(buf.subarray(read), buf.subarray(0, write), true);
      else if (PASSED_OVER.has(code)) this.skipLeft = body;
      else return this.handBack(buf.subarray(read - HEADER), buf.subarray(0, write), true);
    }
    return this.gather(buf.subarray(0, write), false);
  }

  /**
   * Appends decoded payload to the current block, pushing each block once it is full (a read may
   * end one block and start the next) and the last one at the end: every block but the last is
   * exactly BLOCK bytes, so a stage that works in BLOCK-sized pieces (zstd's frames) takes one
   * block at a time instead of joining two.
   */
  private gather(data: Buffer, end: boolean): boolean {
    let wanted = true;
    for (let at = 0; at < data.length;) {
      this.block ??= blockPool.take();
      const n = data.copy(this.block, this.blockLength, at);
      this.blockLength += n;
      at += n;
      if (this.blockLength === BLOCK) wanted = this.flush() && wanted;
    }
    if (end) wanted = this.flush() && wanted;
    return wanted;
  }

  private flush(): boolean {
    if (this.block === null || this.blockLength === 0) return true;
    const full = this.block.subarray(0, this.blockLength);
    this.outstanding.add(full.buffer);
    this.block = null;
    this.blockLength = 0;
    return this.push(full);
  }

  /**
   * Hands back a chunk this stream pushed, once nothing reads or holds its bytes any more (say,
   * they are written to a file), so its block is reused. Anything else is ignored: one recycled
   * already, or one this stream never pushed.
   */
  recycle(chunk: Buffer): void {
    if (!this.outstanding.delete(chunk.buffer)) return;
    blockPool.keep(Buffer.from(chunk.buffer, 0, BLOCK));
  }

  /** Gives the connection back to pg with the bytes after the COPY data; pg reports the end or the error. */
  private handBack(rest: Buffer, data: Buffer, done: boolean): boolean {
    const connection = this.connection!;
    const handler = this.pgDataHandler!;
    this.connection = null;
    this.handedBack = true;
    this.pgDataHandler = null;
    if (this.takesReads) releaseReads(connection.stream);
    else {
      connection.stream.removeListener('readable', this.onReadable);
      connection.stream.on('data', handler);
    }
    this.gather(data, true);
    if (done) this.push(null);
    // A copy: a taken read's buffer is the socket's, overwritten by its next read, and pg's parser may keep what it is given.
    handler(Buffer.from(rest));
    // pg's handler may pause the stream on its own high-water mark; resume once it has returned.
    process.nextTick(() => connection.stream.resume());
    return false;
  }

  /** pg: the server reported an error (after {@link handBack} returned the connection). */
  handleError(err: Error): void {
    this.settle?.reject(err);
    this.destroy(err);
  }

  /** pg: `COPY n`. */
  handleCommandComplete(message: { text?: string } | undefined): void {
    const match = /COPY (\d+)/.exec(message?.text ?? '');
    if (match) this.rowCount = Number(match[1]);
  }

  handleReadyForQuery(): void {
    this.settle?.resolve(this.rowCount);
  }
}

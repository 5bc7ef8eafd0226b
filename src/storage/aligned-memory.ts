/**
 * Page-aligned buffers for direct I/O (./durable-file-sink.ts). Linux refuses an O_DIRECT write
 * (EINVAL) from memory whose address is not a multiple of the device's block size, and a Node Buffer
 * comes from malloc (a 1 MiB one sits 16 bytes past a page here) with no way to learn its address.
 * A WebAssembly memory is whole pages from its start, so the buffers are carved from one: a shared
 * one, which grows without detaching the views already handed out, and only one, because V8 reserves
 * (address space, not memory) 10 GiB for each. Buffers given back are reused; the memory itself is
 * never returned to the system, so the pool is bounded: past {@link MAX_ALIGNED_BUFFERS} in use, a
 * caller gets none and writes through the page cache instead.
 */

/** Bytes of each buffer: a multiple of every block size a device may require. */
export const ALIGNED_BUFFER_BYTES = 1 << 20;
/**
 * Buffers in use at most: one per file being written, so 8 partitions in flight (the default) take 8.
 * A worker that writes more files at once writes the others through the page cache.
 */
export const MAX_ALIGNED_BUFFERS = 32;
/** The alignment every buffer has (its address), and that a direct write's length and offset keep. */
export const DIRECT_IO_ALIGNMENT = 4096;

/** What this module uses of a shared WebAssembly.Memory (the project's TypeScript lib has no WebAssembly types). */
interface SharedWasmMemory {
  readonly buffer: SharedArrayBuffer;
  grow(pages: number): number;
}
const { Memory } = (
  globalThis as unknown as { WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number; shared: true }) => SharedWasmMemory } }
).WebAssembly;

const WASM_PAGE = 64 << 10;
const PAGES_PER_BUFFER = ALIGNED_BUFFER_BYTES / WASM_PAGE;

let memory: SharedWasmMemory | null = null;
/** Buffers carved so far (the memory's size), and those handed back. */
let carved = 0;
const spares: Buffer[] = [];
const inUse = new WeakSet<Buffer>();

/** An aligned buffer of {@link ALIGNED_BUFFER_BYTES}, or null when {@link MAX_ALIGNED_BUFFERS} are in use or the memory cannot grow. */
export function takeAlignedBuffer(): Buffer | null {
  let buffer = spares.pop();
  if (buffer === undefined) {
    if (carved === MAX_ALIGNED_BUFFERS) return null;
    try {
      memory ??= new Memory({ initial: 0, maximum: MAX_ALIGNED_BUFFERS * PAGES_PER_BUFFER, shared: true });
      memory.grow(PAGES_PER_BUFFER);
    } catch {
      return null; // no address space for it (ulimit -v) or no memory: the page cache it is
    }
    buffer = Buffer.from(memory.buffer, carved * ALIGNED_BUFFER_BYTES, ALIGNED_BUFFER_BYTES);
    carved += 1;
  }
  inUse.add(buffer);
  return buffer;
}

/** Gives back a buffer from {@link takeAlignedBuffer} once no write reads it any more; anything else is ignored. */
export function giveBackAlignedBuffer(buffer: Buffer): void {
  if (inUse.delete(buffer)) spares.push(buffer);
}

/**
 * The pool of 1 MiB COPY blocks (./copy-out-stream.ts). A fresh block is new pages for the kernel to
 * map and zero, and external memory V8 counts: a block per COPY set off a mark-compact every few
 * tables of a set, about a third of a second of a 200-table run's main thread. So blocks handed back
 * are kept as spares for any later COPY of the process, and spares that no COPY took for a while are
 * freed (../storage/free-memory.ts), so a worker that ran a set's 8 lanes does not carry their blocks
 * through the runs after it.
 */
import { freeMemory } from '../storage/free-memory';

/** Payload is handed on in blocks of this size: a 16 kB socket read per file write cost more system time than the copy. */
export const BLOCK = 1 << 20;
/**
 * Spares kept at most: what 8 COPYs in flight can hold at once (each up to two in its own buffer, one
 * or two in the digest's, one or two in the sink's, one being written). Blocks beyond the spares are
 * new memory and garbage: with 16 spares, 4 partitions set off 42 mark-compacts in three 5 M-row runs
 * against 5 with 64, and the worker spent 2.5 CPU-s a run instead of 1.7.
 */
const MAX_SPARE_BLOCKS = 64;
/** Spares never freed: what two partitions use. */
const KEPT_SPARE_BLOCKS = 16;
/** A spare that no COPY took for a whole interval of this length (so 2–4 s unused) is freed, down to {@link KEPT_SPARE_BLOCKS}. */
const UNUSED_MS = 2_000;

export class BlockPool {
  /** A stack: the bottom ones are those unused longest. */
  private readonly spares: Buffer[] = [];
  /** The fewest spares held since the last check: the bottom that many were not taken in that time. */
  private fewestSince = 0;
  private check: NodeJS.Timeout | null = null;

  /** A spare block, or a new one. */
  take(): Buffer {
    const block = this.spares.pop();
    this.fewestSince = Math.min(this.fewestSince, this.spares.length);
    return block ?? Buffer.allocUnsafeSlow(BLOCK);
  }

  /** Keeps `block`, a whole block that no one reads or holds any more, for a later COPY. Anything else is ignored. */
  keep(block: Buffer): void {
    if (block.byteOffset !== 0 || block.length !== BLOCK || block.buffer.byteLength !== BLOCK) return;
    if (this.spares.length >= MAX_SPARE_BLOCKS) return freeMemory(block);
    this.spares.push(block);
    if (this.check === null && this.spares.length > KEPT_SPARE_BLOCKS) this.checkLater();
  }

  /** The spares held now. */
  get spareCount(): number {
    return this.spares.length;
  }

  private checkLater(): void {
    this.fewestSince = this.spares.length;
    this.check = setTimeout(() => this.freeUnused(), UNUSED_MS).unref();
  }

  private freeUnused(): void {
    this.check = null;
    for (const block of this.spares.splice(0, Math.min(this.fewestSince, this.spares.length - KEPT_SPARE_BLOCKS))) freeMemory(block);
    if (this.spares.length > KEPT_SPARE_BLOCKS) this.checkLater();
  }
}

/** The worker process's pool: every COPY of the process shares it. */
export const blockPool = new BlockPool();

/**
 * Size-bounded batch files, read inside a transaction the caller holds open: a range of rows is
 * cut into batches, each one `COPY (… WHERE <batch>) TO STDOUT` into its own file. Batches are
 * keyset ranges (one index probe of n keys per batch, linear overall — never LIMIT/OFFSET) or,
 * for rows without a key (no split key, NULL keys), ctid page ranges. The batch size adapts to
 * the bounds: a batch whose file exceeds one is discarded and read again smaller, so every file
 * stays within both bounds unless a single key (or page) alone exceeds them. The final batch reads
 * past everything read before; it is empty (and leaves no file) unless rows remain, which proves
 * the range exhausted.
 */
import type { Client } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import type { FileBounds } from '../contract/file-bounds';
import type { CopiedOutput, OutputSink } from '../storage/output-sink';
import { type ResolvedTable, fromItem, selectSql, sourceColumns } from './catalog';
import type { SplitKey } from '../contract/partition-range';
import type { ExportFormat } from '../contract/formats';
import { exportToOutput } from './export-to-output';
import type { PartitionRange } from '../contract/partition-range';
import { keyBound } from './range-predicate';
import { serverNow } from './server-clock';
import { quoteIdent, quoteLiteral, quoteQualified } from './sql';

/** One file of the sequence: its place in it and what it holds. */
export interface BatchFile extends CopiedOutput {
  /** 0, 1, 2… in row order within the range. */
  index: number;
  /** Server clock after the batch was read. */
  completedAt: string;
}

/** Options for {@link copyBatchFiles}. */
export interface BatchFilesOptions {
  format: ExportFormat;
  bounds: FileBounds;
  /** The sink of the index-th file. */
  sink: (index: number) => Promise<OutputSink>;
  /** Running byte count over the whole sequence. */
  onBytes?: (bytes: number) => void;
  signal?: AbortSignal;
}

/** The rows of one batch; `last` when nothing of the range lies past it. */
interface Batch {
  where: string;
  last: boolean;
}

/** Walks a range in order: {@link peek} proposes a batch of `size` units, {@link advance} takes it. */
interface BatchCursor {
  readonly unit: 'keys' | 'pages';
  peek(size: number): Promise<Batch>;
  advance(): void;
}

/** The largest batch, in keys or pages: one probe stays one bounded index scan. */
const MAX_BATCH = 10_000_000;
/** A byte-bounded batch aims this far under the bound, so rows a little wider than the last batch's still fit. */
const BYTES_HEADROOM = 0.9;

/**
 * Writes the rows of `range` as bounded files, in order. Runs inside the caller's transaction.
 * On failure the files it committed stay: the next try clears its prefix, and a failed attempt's
 * discard removes it. Removing them here could remove a later try's files of the same names, when
 * this try outlived its heartbeat timeout and learns of its cancellation only after the retry began.
 */
export async function* copyBatchFiles(client: Client, table: ResolvedTable, range: PartitionRange, options: BatchFilesOptions): AsyncGenerator<BatchFile> {
  let total = 0;
  let index = 0;
  for (const cursor of cursorsFor(client, table, range)) {
    let size = initialSize(cursor.unit, options.bounds);
    for (;;) {
      const batch = await cursor.peek(size);
      const sink = await options.sink(index);
      const out = await exportToOutput(client, selectSql(table, batch.where), sourceColumns(table), options.format, sink, {
        onBytes: (bytes) => options.onBytes?.(total + bytes),
        signal: options.signal,
      });
      const completedAt = await serverNow(client);
      const rows = out.rows;
      const { maxRows, maxBytes } = options.bounds;
      const over = (maxRows !== null && rows > maxRows) || (maxBytes !== null && out.bytes > maxBytes);
      const scale = fitScale(options.bounds, rows, out.bytes);
      if (over && size > 1 && !batch.last) {
        await sink.discard();
        size = Math.max(1, Math.min(size - 1, Math.floor(size * scale)));
        continue;
      }
      cursor.advance();
      if (rows === 0) {
        await sink.discard();
      } else {
        total += out.bytes;
        yield { index: index++, location: out.location, etag: out.etag, rows, bytes: out.bytes, sha256: out.sha256, completedAt };
      }
      if (batch.last) break;
      size = Math.max(1, Math.min(MAX_BATCH, rows === 0 ? size * 2 : Math.floor(size * scale)));
    }
  }
}

/** Keys: the row bound itself, else a small first batch that measures the rows' width. Pages: one. */
function initialSize(unit: BatchCursor['unit'], bounds: FileBounds): number {
  if (unit === 'pages') return 1;
  return bounds.maxBytes === null ? bounds.maxRows! : Math.min(bounds.maxRows ?? 1000, 1000);
}

/** How much larger (> 1) or smaller (< 1) a batch like this one could be within the bounds. */
function fitScale(bounds: FileBounds, rows: number, bytes: number): number {
  const byRows = bounds.maxRows === null || rows === 0 ? Infinity : bounds.maxRows / rows;
  const byBytes = bounds.maxBytes === null || bytes === 0 ? Infinity : (bounds.maxBytes * BYTES_HEADROOM) / bytes;
  return Math.min(byRows, byBytes, MAX_BATCH);
}

/**
 * Why `table` cannot be cut into bounded batches, or null. Batches walk a key, and rows without
 * one (no key, or a nullable key's NULLs) by pages of `ctid`, measured on the relation itself: a
 * view has no `ctid`, and a partitioned table's own pages are none (its rows are in its
 * partitions), so its rows without a key would come in one batch, past every bound.
 */
function unbatchable(table: ResolvedTable): string | null {
  const what = `${table.schema}.${table.table}`;
  // A view's columns are never NOT NULL in the catalog, so its NULL keys would need ctid too.
  if (table.relkind === 'v') return `${what} is a view: its rows have no ctid to cut files by`;
  const keyed = table.key !== null && table.columns.some((c) => c.name === table.key!.name && c.notNull);
  if (table.relkind === 'p' && !keyed) return `${what} is partitioned: its rows are cut into files by a NOT NULL single-column key (--key), and it has none`;
  return null;
}

/** The cursors that together cover `range` exactly once. */
function cursorsFor(client: Client, table: ResolvedTable, range: PartitionRange): BatchCursor[] {
  const problem = unbatchable(table);
  if (problem)
    throw new PgExtractError(ErrorCode.FILE_BOUND_INVALID, `batched files: ${problem}; export it without --max-file-bytes/--max-file-rows`, {
      field: 'maxFileBytes',
    });
  const key = table.key;
  switch (range.kind) {
    case 'pages':
      return [new PageCursor(client, table, null, range.fromPage, range.toPage)];
    case 'nulls':
      return [new PageCursor(client, table, `${quoteIdent(key!.name)} IS NULL`, 0, null)];
    case 'key':
      return [new KeysetCursor(client, table, key!, range.lower, range.upper)];
    case 'all': {
      if (!key) return [new PageCursor(client, table, null, 0, null)];
      const keyColumn = table.columns.find((c) => c.name === key.name);
      const nulls = keyColumn?.notNull ? [] : [new PageCursor(client, table, `${quoteIdent(key.name)} IS NULL`, 0, null)];
      return [...nulls, new KeysetCursor(client, table, key, null, null)];
    }
  }
}

/**
 * Keys in [lower, upper) (null ends open), NULL keys excluded: batch (last, n-th next key]. The
 * n-th key is the last of the next n in key order (not max(), which uuid lacks), compared under
 * the key's collation as the index orders it.
 */
class KeysetCursor implements BatchCursor {
  readonly unit = 'keys';
  #last: string | null = null;
  #peeked: string | null = null;

  constructor(
    private readonly client: Client,
    private readonly table: ResolvedTable,
    private readonly key: SplitKey,
    private readonly lower: string | null,
    private readonly upper: string | null,
  ) {}

  async peek(size: number): Promise<Batch> {
    const key = quoteIdent(this.key.name);
    const from = this.#last !== null ? keyBound(this.key, '>', this.#last) : this.lower !== null ? keyBound(this.key, '>=', this.lower) : `${key} IS NOT NULL`;
    const rest = this.upper === null ? from : `${from} AND ${keyBound(this.key, '<', this.upper)}`;
    const probe = await this.client.query<{ upper: string }>(
      `SELECT ${key}::text AS upper FROM (SELECT ${key} FROM ${fromItem(this.table)} WHERE ${rest} ORDER BY ${key} LIMIT ${Math.floor(size)}) s ORDER BY s.${key} DESC LIMIT 1`,
    );
    this.#peeked = probe.rows[0]?.upper ?? null;
    // No key left: this batch is the terminal one, empty by the probe's own reading.
    if (this.#peeked === null) return { where: rest, last: true };
    return { where: `${rest} AND ${keyBound(this.key, '<=', this.#peeked)}`, last: false };
  }

  advance(): void {
    this.#last = this.#peeked;
  }
}

/**
 * Heap pages [from, to) by ctid, with an optional filter. An open end stops at the relation's size
 * when first read; pages added later hold only rows the snapshot cannot see, which the terminal
 * batch (every page from there on) shows.
 */
class PageCursor implements BatchCursor {
  readonly unit = 'pages';
  #at: number;
  #end: number | null;
  #next = 0;

  constructor(
    private readonly client: Client,
    private readonly table: ResolvedTable,
    private readonly filter: string | null,
    from: number,
    private readonly to: number | null,
  ) {
    this.#at = from;
    this.#end = to;
  }

  async peek(size: number): Promise<Batch> {
    const end = (this.#end ??= await this.#relationPages());
    if (this.#at >= end) {
      this.#next = this.#at;
      return { where: this.#where(`ctid >= '(${end},0)'::tid${this.to === null ? '' : ` AND ctid < '(${this.to},0)'::tid`}`), last: true };
    }
    this.#next = Math.min(end, this.#at + Math.floor(size));
    return { where: this.#where(`ctid >= '(${this.#at},0)'::tid AND ctid < '(${this.#next},0)'::tid`), last: this.#next >= end && this.to !== null };
  }

  advance(): void {
    this.#at = this.#next;
  }

  #where(pages: string): string {
    return this.filter ? `${this.filter} AND ${pages}` : pages;
  }

  async #relationPages(): Promise<number> {
    const relation = quoteQualified(this.table.schema, this.table.table);
    const r = await this.client.query<{ pages: string }>(
      `SELECT (pg_relation_size(${quoteLiteral(relation)}::regclass) / current_setting('block_size')::int)::text AS pages`,
    );
    return Number(r.rows[0]!.pages);
  }
}

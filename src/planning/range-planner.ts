/**
 * The range planner: pure arithmetic that splits a key's [MIN, MAX] (read inside the exported
 * snapshot) into ordered, disjoint partitions. The first and last ranges are open-ended, so
 * coverage never depends on how exactly a boundary literal round-trips; NULL keys get their own
 * partition; boundaries come from sampled quantiles when given (balanced under skew), else a
 * uniform split. Text keys are ordered by their collation, which only the server knows: their
 * cuts come only from quantiles, in the order the server sorted them. Tables without a usable
 * key split by ctid page ranges.
 */
import { type KeyKind, MAX_BOUND_LENGTH, type PartitionRange } from '../contract/partition-range';

/** What the coordinator read inside the snapshot. */
export interface KeyBounds {
  kind: KeyKind;
  /** MIN/MAX as text (session TimeZone UTC); null when every key is NULL or the table is empty. */
  min: string | null;
  max: string | null;
  /** The rows planned for (auto partitioning: exact for small tables, else an estimate); null for a fixed count. */
  rowCount: number | null;
  /** Whether any key IS NULL. */
  hasNulls: boolean;
  /** Quantile values as text, sorted by the server (e.g. percentile_disc over a sample); may be empty. */
  quantiles?: readonly string[];
}

/** Converts between a key's text form and an ordinal the planner can do arithmetic on. */
interface OrdinalCodec<T> {
  parse(text: string): T | undefined;
  format(value: T): string;
  /** a < b; absent when only the server knows the order (then quantiles are taken in its order). */
  less?(a: T, b: T): boolean;
  /** The i-th of n cut points between lo and hi; absent when only quantiles can place cuts. */
  interpolate?(lo: T, hi: T, i: number, n: number): T;
}

const bigintCodec = (parse: (t: string) => bigint | undefined, format: (v: bigint) => string): OrdinalCodec<bigint> => ({
  parse,
  format,
  // Discrete keys: split the hi - lo + 1 values evenly, so even a span of 1 can be cut.
  interpolate: (lo, hi, i, n) => lo + ((hi - lo + 1n) * BigInt(i)) / BigInt(n),
  less: (a, b) => a < b,
});

const DAY_MS = 86_400_000;
function parseTimestampMicros(text: string): bigint | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(\+00(?::?00)?|Z)?$/.exec(text);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}T${m[2]}Z`);
  return Number.isNaN(ms) ? undefined : BigInt(ms) * 1000n + BigInt((m[3] ?? '').padEnd(6, '0'));
}
function formatTimestampMicros(v: bigint, zone: string): string {
  const ms = v / 1000n - (v % 1000n < 0n ? 1n : 0n);
  const micros = v - ms * 1000n;
  const iso = new Date(Number(ms)).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}${String(micros).padStart(3, '0')}${zone}`;
}
function parseInteger(text: string): bigint | undefined {
  return /^-?\d+$/.test(text) ? BigInt(text) : undefined;
}

const CODECS: Record<KeyKind, OrdinalCodec<any>> = {
  integer: bigintCodec(parseInteger, String),
  uuid: bigintCodec(
    (t) => (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(t) ? BigInt(`0x${t.replace(/-/g, '')}`) : undefined),
    (v) =>
      v
        .toString(16)
        .padStart(32, '0')
        .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5'),
  ),
  date: bigintCodec(
    (t) => (/^\d{4}-\d{2}-\d{2}$/.test(t) && !Number.isNaN(Date.parse(`${t}T00:00:00Z`)) ? BigInt(Date.parse(`${t}T00:00:00Z`) / DAY_MS) : undefined),
    (v) => new Date(Number(v) * DAY_MS).toISOString().slice(0, 10),
  ),
  timestamp: bigintCodec(parseTimestampMicros, (v) => formatTimestampMicros(v, '')),
  timestamptz: bigintCodec(parseTimestampMicros, (v) => formatTimestampMicros(v, '+00')),
  numeric: {
    parse: (t: string) => (/^-?\d+(\.\d+)?$/.test(t) && Number.isFinite(Number(t)) ? Number(t) : undefined),
    format: (v: number) => String(v),
    interpolate: (lo: number, hi: number, i: number, n: number) => lo + ((hi - lo) * i) / n,
    less: (a: number, b: number) => a < b,
  },
  text: { parse: (t: string) => t, format: (v: string) => v },
};

/** `auto` partitioning's rows per partition, one value for every source (a caller may name its own). */
export const AUTO_TARGET_ROWS = 250_000;
/** The most partitions `auto` plans for one table, one value for every source (a caller may name its own). */
export const AUTO_MAX_PARTITIONS = 16;

/** n = clamp(ceil(rows / targetRows), 1, max). */
export function autoPartitionCount(rowCount: number, options: { targetRows: number; max: number }): number {
  return Math.max(1, Math.min(options.max, Math.ceil(rowCount / Math.max(1, options.targetRows))));
}

/** Plans at most `partitions` key ranges (plus one NULL range when NULL keys exist). */
export function planKeyRanges(bounds: KeyBounds, partitions: number): PartitionRange[] {
  const nulls: PartitionRange[] = bounds.hasNulls ? [{ kind: 'nulls' }] : [];
  // No non-NULL key: only the NULL partition, or (an empty table) one empty, receipted partition.
  if (bounds.min === null || bounds.max === null) return nulls.length ? nulls : [{ kind: 'all' }];
  const codec = CODECS[bounds.kind];
  const lo = codec.parse(bounds.min);
  const hi = codec.parse(bounds.max);
  const keyRanges = Math.max(1, Math.min(partitions - nulls.length || 1, bounds.rowCount ?? partitions));
  let cuts: unknown[] = [];
  if (keyRanges > 1) {
    // An end the codec cannot read (a numeric NaN, a float's or a date's infinity) leaves nothing to interpolate
    // between: the readable quantiles cut the ranges (the ones it cannot read are dropped), and the outer ranges stay open.
    const quantiles = (bounds.quantiles ?? []).map((q) => codec.parse(q)).filter((q) => q !== undefined);
    const interpolate = lo !== undefined && hi !== undefined ? codec.interpolate : undefined;
    if (quantiles.length >= keyRanges - 1 || !interpolate) {
      // Too few quantiles and nothing to interpolate: fewer ranges.
      const n = Math.min(keyRanges, quantiles.length + 1);
      cuts = Array.from({ length: n - 1 }, (_, i) => quantiles[Math.floor(((i + 1) * quantiles.length) / n)]);
    } else {
      cuts = Array.from({ length: keyRanges - 1 }, (_, i) => interpolate(lo, hi, i + 1, keyRanges));
    }
    cuts = increasingCuts(codec, lo, hi, cuts);
  }
  const edges = [null, ...cuts.map((c) => codec.format(c)), null];
  const ranges: PartitionRange[] = edges.slice(1).map((upper, i) => ({ kind: 'key', lower: edges[i] ?? null, upper }));
  return [...ranges, ...nulls];
}

/**
 * Keeps strictly increasing cuts within (MIN, MAX]: a cut at or below MIN would make an empty first
 * range. Without a JS order (text) the cuts are already in the server's order and within the
 * data's bounds, so only repeats (and MIN itself) are dropped. An end the codec could not read
 * (undefined) bounds nothing.
 */
function increasingCuts(codec: OrdinalCodec<any>, lo: unknown, hi: unknown, cuts: unknown[]): unknown[] {
  const kept: unknown[] = [];
  for (const cut of cuts) {
    if (cut === undefined || codec.format(cut).length > MAX_BOUND_LENGTH) continue;
    const prev = kept.length ? kept[kept.length - 1] : lo;
    const above = prev === undefined || (codec.less ? codec.less(prev, cut) : codec.format(prev) !== codec.format(cut));
    const within = hi === undefined || !codec.less || !codec.less(hi, cut);
    if (above && within) kept.push(cut);
  }
  return kept;
}

/** Splits `pages` heap pages into `partitions` ctid ranges; the last is open for pages added later. */
export function planPageRanges(pages: number, partitions: number): PartitionRange[] {
  const n = Math.max(1, Math.min(partitions, pages));
  if (n === 1) return [{ kind: 'all' }];
  const step = Math.ceil(pages / n);
  return Array.from({ length: n }, (_, i) => ({
    kind: 'pages' as const,
    fromPage: i * step,
    toPage: i === n - 1 ? null : (i + 1) * step,
  })).filter((r) => r.toPage === null || r.fromPage < r.toPage);
}

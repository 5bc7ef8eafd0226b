/**
 * Size bounds of batched files: `--max-file-bytes` (a byte count or a size with a unit) and
 * `--max-file-rows` (their files' names are in ./file-names.ts). Pure (no zod), so the workflow bundle can use it.
 */

/** Decimal units are powers of 1000, binary ones (KiB, MiB…) powers of 1024, as storage vendors write them. */
const UNITS = new Map<string, number>([
  ['b', 1],
  ['kb', 1e3],
  ['mb', 1e6],
  ['gb', 1e9],
  ['tb', 1e12],
  ['kib', 2 ** 10],
  ['mib', 2 ** 20],
  ['gib', 2 ** 30],
  ['tib', 2 ** 40],
]);
const SIZE = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i;

/** The smallest byte bound: below it most files would hold one row that exceeds it anyway. */
export const MIN_FILE_BYTES = 1024;
/** The largest byte bound: S3 objects end at 5 TB. */
export const MAX_FILE_BYTES = 5e12;
export const MAX_FILE_ROWS = 1e12;
export const MAX_FILE_BYTES_HINT = `a size from ${MIN_FILE_BYTES} bytes to 5TB, e.g. 256MB or 1GiB (KB/MB/GB are powers of 1000, KiB/MiB/GiB of 1024)`;

/** `256MB` → 256000000, `1GiB` → 1073741824, `4096` → 4096; undefined when it is not a size. */
export function parseByteSize(text: string): number | undefined {
  const m = SIZE.exec(text);
  const unit = UNITS.get((m?.[2] || 'b').toLowerCase());
  if (!m || unit === undefined) return undefined;
  const bytes = Number(m[1]) * unit;
  return Number.isSafeInteger(bytes) ? bytes : Number.isFinite(bytes) ? Math.floor(bytes) : undefined;
}

/** The bounds a batched export respects; at least one is set. */
export interface FileBounds {
  maxBytes: number | null;
  maxRows: number | null;
}

/** The input's bounds, or null when files are not batched. */
export function fileBoundsOf(input: { maxFileBytes?: number; maxFileRows?: number }): FileBounds | null {
  if (input.maxFileBytes === undefined && input.maxFileRows === undefined) return null;
  return { maxBytes: input.maxFileBytes ?? null, maxRows: input.maxFileRows ?? null };
}

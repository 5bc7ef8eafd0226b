/**
 * How big each part of a multipart upload is. A writer holds up to two part buffers (one filling,
 * one uploading), so the part size is its memory; S3 allows 10 000 parts, each but the last
 * 5 MiB–5 GiB, sizes free to differ. Fixed 64 MiB parts cost every writer 64–128 MiB even for a
 * small object; fixed small parts cap the object (5 MiB × 10 000 = 48.8 GiB).
 *
 * So parts start at S3's minimum, 5 MiB (also @aws-sdk/lib-storage's default), and double every
 * 1 000 parts up to 128 MiB: an object up to 4.9 GiB uses 5 MiB parts (10 MiB per writer), 10 MiB
 * parts to 14.6 GiB, 20 MiB to 34 GiB, 40 MiB to 73 GiB, 80 MiB to 151 GiB, then 128 MiB parts
 * reach 776 GiB at part 10 000 — more than the 640 GiB of fixed 64 MiB parts. Only objects over
 * 151 GiB hold 2 × 128 MiB. Measured (2 M rows, 2 partitions → SeaweedFS): the worker peaked at
 * 252 MB with 5 MiB first parts, 266 MB with 8 MiB; the server's CPU per byte was the same with
 * 5, 8 and 64 MiB parts.
 */

/** S3's smallest part (all but the last); smaller first sizes are raised to it. */
export const S3_MIN_PART_SIZE = 5 * 1024 * 1024;
/** S3's most parts in one upload. */
export const S3_MAX_PARTS = 10_000;
/** Parts stop growing here: it bounds a writer's memory at 2 × 128 MiB. */
export const MAX_PART_SIZE = 128 * 1024 * 1024;

/** Options for {@link PartSizes}; the defaults are the plan above, tests pass small ones. */
export interface PartSizeOptions {
  /** @default 5 MiB (S3's minimum); smaller values are raised to it. */
  firstPartSize?: number;
  /** How many parts have one size before it doubles. @default 1000 */
  partsPerSize?: number;
  /** The most parts an upload may have; bytes beyond them fail the writer with S3_OBJECT_TOO_LARGE. @default 10 000 (S3's) */
  maxParts?: number;
}

export class PartSizes {
  private readonly first: number;
  private readonly perSize: number;

  constructor(options: PartSizeOptions = {}) {
    this.first = Math.max(S3_MIN_PART_SIZE, options.firstPartSize ?? S3_MIN_PART_SIZE);
    this.perSize = Math.max(1, options.partsPerSize ?? 1000);
  }

  /** The size of part `partNumber` (1-based, as S3 numbers them). */
  of(partNumber: number): number {
    return Math.min(MAX_PART_SIZE, this.first * 2 ** Math.floor((partNumber - 1) / this.perSize));
  }
}

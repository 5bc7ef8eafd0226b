/** The stream stages that compress a CSV or binary file whole as it is written, and undo it as it is read. */
import type { Transform } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { type ExportFormat, fileCompression } from '../contract/formats';
import { ZstdCompress, ZstdDecompress } from './zstd';

/**
 * The compressing stage for `format`'s files, or undefined for plain files. gzip at level 1: its cost is the output's
 * bottleneck. zstd hands each input chunk to `recycle` once compressed (gzip's zlib gives no such moment).
 */
export function compressStage(format: ExportFormat, recycle?: (chunk: Buffer) => void): Transform | undefined {
  const compression = fileCompression(format);
  if (compression === 'gzip') return createGzip({ level: 1 });
  return compression === 'zstd' ? new ZstdCompress(undefined, recycle) : undefined;
}

/** The decompressing stage for `format`'s files, or undefined for plain files. */
export function decompressStage(format: ExportFormat): Transform | undefined {
  const compression = fileCompression(format);
  if (compression === 'gzip') return createGunzip();
  return compression === 'zstd' ? new ZstdDecompress() : undefined;
}

/**
 * What a finished file holds, byte for byte: the one receipt shape that the extraction receipt's
 * evidence, the manifest's files, the data package and the loader's requests all build on. Pure.
 */
import { z } from 'zod';

export const sha256HexSchema = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 hex digest');

/** The bytes of a file as written, and the SHA-256 of exactly those bytes. */
export const writtenFileSchema = z.object({
  bytes: z.number().int().nonnegative(),
  sha256: sha256HexSchema,
});
export type WrittenFile = z.infer<typeof writtenFileSchema>;

/** A receipted file: its name (relative to the output root, or its `s3://` URL), its rows, bytes and sha256. */
export const fileReceiptSchema = writtenFileSchema.extend({
  name: z.string().min(1),
  rows: z.number().int().nonnegative(),
});
export type FileReceipt = z.infer<typeof fileReceiptSchema>;

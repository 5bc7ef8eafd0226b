/**
 * The built-in target owner's requests: one zod schema each, types inferred from them. A file
 * to load is its manifest entry's place, rows and sha256 (see FileReceipt); Parquet never reaches
 * a load (the input refuses it, and these schemas do too). Pure.
 */
import { z } from 'zod';
import { parseExtractionInput } from './extraction-input';
import { fileReceiptSchema } from './file-receipt';
import { FILE_COMPRESSIONS } from './format-options';

const targetName = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,62}$/);
const tableName = z.string().min(1).max(300);
const mode = z.enum(['append', 'replace']);
const operationId = z.string().min(1).max(300);
/**
 * The files' columns in file order: each field loads into the target column of its name, as
 * pg_dump's COPY lists them. Absent from loads scheduled by an earlier release (then by position).
 */
const columnNames = z.array(z.string().min(1).max(63)).max(1600);
/**
 * Each column's type at the source, in file order (`format_type`; a domain as its base type). Sent
 * with binary files, whose values load only into columns of the same type (target/binary-types.ts).
 */
const columnTypes = z.array(z.string().min(1).max(1000)).max(1600);

/** Types come with the columns they type, one each. */
const sameLengths = (columns: readonly string[] | undefined, types: readonly string[] | undefined): boolean => !types || columns?.length === types.length;
const COLUMN_TYPES_MISMATCH = { message: 'one type for each of columns', path: ['columnTypes'] };

/** A file the manifest lists: where it is (a path or an `s3://` URL) and what its receipt says it holds. */
const loadFile = { path: z.string().min(1).max(4096), rows: fileReceiptSchema.shape.rows, sha256: fileReceiptSchema.shape.sha256 };

const loadFormatSchema = z.strictObject({
  format: z.enum(['csv', 'binary', 'parquet']).refine((f): boolean => f !== 'parquet', 'the built-in loader COPYs CSV or binary files; it cannot load Parquet'),
  header: z.boolean(),
  gzip: z.boolean(),
  /** Absent from requests of runs started before zstd (then `gzip` says it). */
  compression: z.enum(FILE_COMPRESSIONS).optional(),
});

/** Load one table's files into one target table, in one transaction behind the fence. */
export const loadTargetRequestSchema = z
  .strictObject({
    target: z.strictObject({ name: targetName, table: tableName, mode }),
    files: z.array(z.strictObject(loadFile)).max(10_000),
    format: loadFormatSchema,
    operationId,
    columns: columnNames.optional(),
    columnTypes: columnTypes.optional(),
  })
  .refine((r) => sameLengths(r.columns, r.columnTypes), COLUMN_TYPES_MISMATCH);
export type LoadTargetRequest = z.output<typeof loadTargetRequestSchema>;

/** Load a run of several tables: each into its mapped target table, in one transaction behind the fence. */
export const loadTargetSetRequestSchema = z.strictObject({
  /** Where each table loads: `schema` (the same name there) or `tables` (an explicit map); see target-mapping.ts. */
  target: z.strictObject({ name: targetName, mode, schema: z.string().min(1).max(130).optional(), tables: z.record(tableName, tableName).optional() }),
  /** Every file of the run, each naming its source table as the manifest does. */
  files: z.array(z.strictObject({ ...loadFile, table: tableName })).max(100_000),
  format: loadFormatSchema,
  operationId,
  /**
   * The run's data package, as its manifest entry gives it: each table's columns in file order with
   * their types, read from the store (checked against this sha256) rather than carried in history,
   * where a list of every column of every table would outgrow a payload (2 MB) on a wide schema.
   */
  dataPackage: z.strictObject({ path: loadFile.path, sha256: loadFile.sha256 }).optional(),
  /** Each source table's columns (see columnNames): loads scheduled by an earlier release that named them here. */
  columns: z.record(tableName, columnNames).optional(),
});
export type LoadTargetSetRequest = z.output<typeof loadTargetSetRequestSchema>;

/** Load without files (internal query, stream): the run's input names source, table and target. */
export const loadWithoutFilesRequestSchema = z.strictObject({
  input: z.unknown().transform((raw) => parseExtractionInput(raw)),
  operationId,
});
export type LoadWithoutFilesRequest = z.output<typeof loadWithoutFilesRequestSchema>;

/** Drop what a stream left on the target under `operationId`. */
export const releaseStreamStagingRequestSchema = z.strictObject({ target: z.strictObject({ name: targetName, table: tableName }), operationId });
export type ReleaseStreamStagingRequest = z.output<typeof releaseStreamStagingRequestSchema>;

/** Ask a target's commit fence whether the load `operationId` committed: for a load that ended without a report. */
export const loadFenceRequestSchema = z.strictObject({ target: targetName, operationId });
export type LoadFenceRequest = z.output<typeof loadFenceRequestSchema>;

/** What the fence says: the load committed, did not, or the fence could not be read. */
export type LoadFenceVerdict = 'committed' | 'not_committed' | 'unreadable';

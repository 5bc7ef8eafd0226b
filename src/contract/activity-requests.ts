/**
 * The extraction activities' requests and results: one zod schema each, types inferred from them,
 * so the workflow that sends a request and the activity that parses it agree by construction.
 * Activities parse their request here before they open a session or touch a file: the workflow is
 * trusted with names, not with SQL. Pure.
 */
import { z } from 'zod';
import { isRunId } from './identifiers';
import { ErrorCode } from '../errors';
import { MAX_TABLES, parseExtractionInput } from './extraction-input';
import { fileReceiptSchema } from './file-receipt';
import { isSnapshotId } from './identifiers';
import { parseOrThrow } from './parse';
import { partitionRangeSchema, sourceIdentitySchema, splitKeySchema } from './partition-range';
import { sourceColumnSchema } from './source-column';

const name63 = z.string().min(1).max(63);
const path = z.string().min(1).max(4096);

/** A name relative to the output root (or an `s3://` URL): never absolute, never with a NUL. */
export const relativeNameSchema = z
  .string()
  .min(1)
  .max(2048)
  .refine((v) => !v.includes('\0') && !v.startsWith('/'), 'a relative file name');

/** A file's name within its folder: no separator, not `.` or `..`. */
const baseNameSchema = z
  .string()
  .min(1)
  .max(255)
  .refine((v) => !/[/\\\0]/.test(v) && v !== '.' && v !== '..', 'a file name without a folder');

/** The run's input, parsed again on the activity's side of the boundary (its own coded errors). */
const inputSchema = z.unknown().transform((raw) => parseExtractionInput(raw));

/**
 * A table as the plan names it: schema, table and the exported columns in file order. A set's plan
 * names no columns (plans recorded by earlier releases did): a set exports every column of each
 * table, so each read takes them in the table's order inside the snapshot, where the holder's ACCESS
 * SHARE lock keeps them as planned, and the history holds no list that grows with the tables' widths.
 */
const planTableSchema = z.strictObject({ schema: name63, table: name63, columns: z.array(name63).optional() });

const snapshotIdSchema = z.string().refine(isSnapshotId, { message: 'not a pg_export_snapshot() id', params: { code: ErrorCode.SNAPSHOT_ID_INVALID } });
const snapshotDigestSchema = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'a sha256: snapshot digest');

/** One planned range of one table, and the file it goes to. */
const rangeItem = {
  table: planTableSchema,
  key: splitKeySchema.nullable(),
  range: partitionRangeSchema,
  partition: z.number().int().nonnegative(),
  /** File name relative to the output root. */
  name: relativeNameSchema,
};

/** Copy one planned range inside the exported snapshot. */
export const partitionRequestSchema = z.strictObject({
  input: inputSchema,
  /** Null for a source without a native snapshot (MySQL). */
  snapshotId: snapshotIdSchema.nullable(),
  /** The plan's snapshot digest, which the partition proves it sees; absent from workflows started on older code, null without a snapshot. */
  snapshotDigest: snapshotDigestSchema.nullable().optional(),
  /** The cluster and database the plan was made on; absent from workflows started on older code. */
  source: sourceIdentitySchema.optional(),
  ...rangeItem,
});
export type PartitionRequest = z.output<typeof partitionRequestSchema>;

/** The most ranges one copyTables call takes (a batch's worth). */
export const MAX_GROUP_RANGES = 500;

/** Copy a group of small tables' planned ranges inside the exported snapshot, on one session, one file each. */
export const tableGroupRequestSchema = z.strictObject({
  input: inputSchema,
  snapshotId: snapshotIdSchema,
  snapshotDigest: snapshotDigestSchema,
  source: sourceIdentitySchema,
  ranges: z.array(z.strictObject(rangeItem)).min(1).max(MAX_GROUP_RANGES),
});
export type TableGroupRequest = z.output<typeof tableGroupRequestSchema>;

/** Copy the whole table in one transaction of its own. */
export const wholeCopyRequestSchema = z.strictObject({ input: inputSchema, name: relativeNameSchema });
export type WholeCopyRequest = z.output<typeof wholeCopyRequestSchema>;

/** Export a snapshot, plan, and hold it until completed or cancelled. */
export const holdSnapshotRequestSchema = z.strictObject({ attemptKey: z.string().min(1).max(300), input: inputSchema });
export type HoldSnapshotRequest = z.output<typeof holdSnapshotRequestSchema>;

/** Complete the held read with the files written inside it. */
export const completeSnapshotRequestSchema = z.strictObject({
  attemptKey: z.string().min(1).max(300),
  evidence: z.array(fileReceiptSchema),
  /** How many planned ranges the workflow saw read to their end; absent from older runs (then one file per range). */
  rangesRead: z.number().int().nonnegative().optional(),
});
export type CompleteSnapshotRequest = z.output<typeof completeSnapshotRequestSchema>;

/** The plan the holder shares with the workflow. */
export const snapshotPlanViewSchema = z.strictObject({
  attemptKey: z.string(),
  /** Null, like the digest and the coordinator pid, for a source without a native snapshot. */
  snapshotId: z.string().nullable(),
  snapshotDigest: z.string().nullable(),
  coordinatorPid: z.number().int().nullable(),
  /** The cluster and database the snapshot was exported on; absent from plans recorded by older code. */
  source: sourceIdentitySchema.optional(),
  table: planTableSchema,
  /** The columns' types and the primary key, for the data package; absent from plans recorded by older code. */
  columns: z.array(sourceColumnSchema).optional(),
  primaryKey: z.array(name63).optional(),
  key: splitKeySchema.nullable(),
  ranges: z.array(partitionRangeSchema),
  rowCount: z.number().nullable(),
});
export type SnapshotPlanView = z.output<typeof snapshotPlanViewSchema>;

/** The plan of a set of tables, biggest first; every table's ranges are read inside the one snapshot. */
export const snapshotSetPlanViewSchema = z.strictObject({
  attemptKey: z.string(),
  snapshotId: z.string(),
  snapshotDigest: z.string(),
  coordinatorPid: z.number().int(),
  source: sourceIdentitySchema,
  tables: z.array(z.strictObject({ table: planTableSchema, key: splitKeySchema.nullable(), bytes: z.number(), ranges: z.array(partitionRangeSchema) })),
});
export type SnapshotSetPlanView = z.output<typeof snapshotSetPlanViewSchema>;

/** Write the run's data package next to its files. */
export const dataPackageRequestSchema = z.strictObject({
  input: inputSchema,
  /** The package's own name, in the files' folder: `<folder>/datapackage.json`. */
  name: relativeNameSchema,
  /** The files' names (relative to the output root, or `s3://` URLs), in partition order. */
  files: z.array(path).min(1).max(10_000),
  columns: z.array(sourceColumnSchema),
  primaryKey: z.array(name63),
});
export type DataPackageRequest = z.output<typeof dataPackageRequestSchema>;

/**
 * Write a set's data package next to its files, from the tables as the snapshot (still held) sees
 * them: each table's column types and primary key are read inside it, never after.
 */
export const setDataPackageRequestSchema = z.strictObject({
  input: inputSchema,
  /** The package's own name, in the files' folder: `<folder>/datapackage.json`. */
  name: relativeNameSchema,
  snapshotId: snapshotIdSchema,
  snapshotDigest: snapshotDigestSchema,
  source: sourceIdentitySchema,
  /** Each table as planned, with its files' base names (in the package's folder) in partition order. */
  tables: z
    .array(z.strictObject({ table: planTableSchema, key: splitKeySchema.nullable(), files: z.array(baseNameSchema).min(1).max(10_000) }))
    .min(1)
    .max(MAX_TABLES),
});
export type SetDataPackageRequest = z.output<typeof setDataPackageRequestSchema>;

/** The run an output folder belongs to, when not the run of the activity handling it (see src/workflows/run-key.ts). */
export const folderRunIdSchema = z.string().refine(isRunId, 'a run id').optional();

/** Release outputs: delete files, sweep partial temp files, discard folders and name prefixes. */
export const releaseOutputsRequestSchema = z.strictObject({
  /** Files to delete: absolute, or relative to the output root; either way confined to it. */
  paths: z.array(path).max(10_000),
  /** Folders to clear of partial temp files only (retained evidence stays). */
  sweepFolders: z.array(path).max(100),
  /** Folders to remove with everything in them (a discarded attempt, a released run). */
  discardFolders: z.array(path).max(100),
  /** Name prefixes whose every file goes first: batched files, some never named to the workflow (a killed writer's). */
  prefixes: z.array(path).max(256).optional(),
  /** The run whose folders these are, when not the activity's own: a reset run's are its first run's. */
  runId: folderRunIdSchema,
});
export type ReleaseOutputsRequest = z.output<typeof releaseOutputsRequestSchema>;

/** Parses an activity request, or throws its first issue coded (see {@link parseOrThrow}). */
export function parseActivityRequest<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  return parseOrThrow(schema, raw, 'request');
}

/**
 * Activity request shapes and their boundary validation. Each activity parses its request here
 * before it opens a session or touches a file: the workflow is trusted with names, not with SQL.
 */
import { z } from 'zod';
import { ErrorCode, PgExtractError } from '../errors';
import type { FileEvidence } from '../lifecycle/receipt';
import type { SplitKey } from '../postgres/catalog';
import { MAX_BOUND_LENGTH, type PartitionRange } from '../planning/range-planner';
import type { SourceIdentity } from '../postgres/source-identity';
import { isSnapshotId } from '../contract/identifiers';
import { type ExtractionInput, parseExtractionInput } from '../contract/extraction-input';
import type { SourceColumn } from '../contract/extraction-types';

const relativeName = z
  .string()
  .min(1)
  .max(2048)
  .refine((v) => !v.includes('\0') && !v.startsWith('/'), 'a relative name');

const rangeSchema: z.ZodType<PartitionRange> = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('all') }),
  z.strictObject({ kind: z.literal('nulls') }),
  z.strictObject({ kind: z.literal('key'), lower: z.string().max(MAX_BOUND_LENGTH).nullable(), upper: z.string().max(MAX_BOUND_LENGTH).nullable() }),
  z.strictObject({ kind: z.literal('pages'), fromPage: z.number().int().nonnegative(), toPage: z.number().int().nonnegative().nullable() }),
]);

const name63 = z.string().min(1).max(63);

const keySchema: z.ZodType<SplitKey> = z.strictObject({
  name: name63,
  kind: z.enum(['integer', 'numeric', 'date', 'timestamp', 'timestamptz', 'uuid', 'text']),
  sqlType: z.enum(['int8', 'numeric', 'date', 'timestamp', 'timestamptz', 'uuid', 'text', 'bpchar']),
  collation: z.strictObject({ schema: name63, name: name63 }).optional(),
});

const sourceIdentitySchema: z.ZodType<SourceIdentity> = z.strictObject({
  systemIdentifier: z.string().regex(/^\d{1,20}$/),
  databaseOid: z.number().int().nonnegative().max(0xffff_ffff),
});

const snapshotIdSchema = z.string().refine(isSnapshotId, 'a pg_export_snapshot() id');
const snapshotDigestSchema = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'a sha256: snapshot digest');

/** One planned range of one table, and the file it goes to. */
const rangeItemSchema = {
  table: z.strictObject({ schema: z.string().min(1).max(63), table: z.string().min(1).max(63), columns: z.array(z.string().min(1).max(63)).min(1) }),
  key: keySchema.nullable(),
  range: rangeSchema,
  partition: z.number().int().nonnegative(),
  name: relativeName,
};

const partitionRequestSchema = z.strictObject({
  input: z.unknown(),
  // Null for a source without a native snapshot (MySQL).
  snapshotId: snapshotIdSchema.nullable(),
  // Optional: copyPartition calls of workflows started on older code lack them.
  snapshotDigest: snapshotDigestSchema.nullable().optional(),
  source: sourceIdentitySchema.optional(),
  ...rangeItemSchema,
});

/** The most ranges one copyTables call takes (a batch's worth). */
export const MAX_GROUP_RANGES = 500;

const tableGroupRequestSchema = z.strictObject({
  input: z.unknown(),
  snapshotId: snapshotIdSchema,
  snapshotDigest: snapshotDigestSchema,
  source: sourceIdentitySchema,
  ranges: z.array(z.strictObject(rangeItemSchema)).min(1).max(MAX_GROUP_RANGES),
});

/** Copy one planned range inside the exported snapshot. */
export interface PartitionActivityRequest {
  input: ExtractionInput;
  /** Null for a source without a native snapshot. */
  snapshotId: string | null;
  /** The plan's snapshot digest and source identity, which the partition proves it sees; absent from workflows started on older code, null without a snapshot. */
  snapshotDigest?: string | null;
  source?: SourceIdentity;
  table: { schema: string; table: string; columns: string[] };
  key: SplitKey | null;
  range: PartitionRange;
  partition: number;
  /** File name relative to the output root. */
  name: string;
}

/** Copy a group of small tables' planned ranges inside the exported snapshot, on one session, one file each. */
export interface TableGroupActivityRequest {
  input: ExtractionInput;
  snapshotId: string;
  snapshotDigest: string;
  source: SourceIdentity;
  ranges: Omit<PartitionActivityRequest, 'input' | 'snapshotId' | 'snapshotDigest' | 'source'>[];
}

/** Export a snapshot, plan, and hold it until completed or cancelled. */
export interface HoldSnapshotRequest {
  attemptKey: string;
  input: ExtractionInput;
}

/** The plan the holder shares with the workflow. */
export interface SnapshotPlanView {
  attemptKey: string;
  /** Null, like the digest and the coordinator pid, for a source without a native snapshot. */
  snapshotId: string | null;
  snapshotDigest: string | null;
  coordinatorPid: number | null;
  /** The cluster and database the snapshot was exported on; absent from plans recorded by older code. */
  source?: SourceIdentity;
  table: { schema: string; table: string; columns: string[] };
  /** The columns' types and the primary key, for the data package; absent from plans recorded by older code. */
  columns?: SourceColumn[];
  primaryKey?: string[];
  key: SplitKey | null;
  ranges: PartitionRange[];
  rowCount: number | null;
}

/** The plan of a set of tables, biggest first; every table's ranges are read inside the one snapshot. */
export interface SnapshotSetPlanView {
  attemptKey: string;
  snapshotId: string;
  snapshotDigest: string;
  coordinatorPid: number;
  source: SourceIdentity;
  tables: { table: { schema: string; table: string; columns: string[] }; key: SplitKey | null; bytes: number; ranges: PartitionRange[] }[];
}

export interface CompleteSnapshotRequest {
  attemptKey: string;
  evidence: FileEvidence[];
  /** How many planned ranges the workflow saw read to their end; absent from older runs (then one file per range). */
  rangesRead?: number;
}

export interface WholeCopyActivityRequest {
  input: ExtractionInput;
  name: string;
}

export interface ReleaseOutputsRequest {
  /** Files to delete: absolute, or relative to the output root; either way confined to it. */
  paths: string[];
  /** Folders to clear of partial temp files only (retained evidence stays). */
  sweepFolders: string[];
  /** Folders to remove with everything in them (a discarded attempt, a released run). */
  discardFolders: string[];
  /** Name prefixes whose every file goes first: batched files, some never named to the workflow (a killed writer's). */
  prefixes?: string[];
}

function invalid(err: z.ZodError): PgExtractError {
  const issue = err.issues[0]!;
  const field = issue.path.join('.') || 'request';
  return new PgExtractError(ErrorCode.INPUT_INVALID, `${field}: ${issue.message}`, { field });
}

/** A copy request's data, or its first issue as an error (a bad snapshot id under a code of its own). */
function parsedCopyRequest<T extends { input: unknown }>(parsed: z.ZodSafeParseResult<T>): Omit<T, 'input'> & { input: ExtractionInput } {
  if (!parsed.success) {
    const snapshotIssue = parsed.error.issues.find((i) => i.path[0] === 'snapshotId');
    if (snapshotIssue) throw new PgExtractError(ErrorCode.SNAPSHOT_ID_INVALID, 'snapshotId: not a pg_export_snapshot() id', { field: 'snapshotId' });
    throw invalid(parsed.error);
  }
  return { ...parsed.data, input: parseExtractionInput(parsed.data.input) };
}

export function parsePartitionRequest(raw: unknown): PartitionActivityRequest {
  return parsedCopyRequest(partitionRequestSchema.safeParse(raw));
}

export function parseTableGroupRequest(raw: unknown): TableGroupActivityRequest {
  return parsedCopyRequest(tableGroupRequestSchema.safeParse(raw));
}

export function parseReleaseRequest(raw: unknown): ReleaseOutputsRequest {
  const path = z.string().min(1).max(4096);
  const folders = z.array(path).max(100);
  const parsed = z
    .strictObject({ paths: z.array(path).max(10_000), sweepFolders: folders, discardFolders: folders, prefixes: z.array(path).max(256).optional() })
    .safeParse(raw);
  if (!parsed.success) throw invalid(parsed.error);
  return parsed.data;
}

export function parseNamed<T extends { input: unknown; name?: unknown }>(raw: T): Omit<T, 'input'> & { input: ExtractionInput } {
  if (raw.name !== undefined && !relativeName.safeParse(raw.name).success) {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, 'name: a relative file name', { field: 'name' });
  }
  return { ...raw, input: parseExtractionInput(raw.input) };
}

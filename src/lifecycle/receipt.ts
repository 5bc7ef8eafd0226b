/**
 * ExtractionLifecycleReceipt: the frozen record of when a source was really read, who issued
 * those timestamps, and what snapshot (if any) can be proven. Validated by one zod schema whose
 * invariant violations carry stable codes; every receipt handed out is deeply frozen.
 */
import { z } from 'zod';
import { type FileReceipt, fileReceiptSchema } from '../contract/file-receipt';
import { ErrorCode, PgExtractError } from '../errors';
import { checkUtcTimestamp, utcMicros } from './utc-timestamp';

/** Who issued the extraction-window timestamps. */
export const ClockAuthority = {
  /** The orchestrating process's own UTC clock (generic adapters). */
  orchestratorUtc: 'orchestrator.utc',
  /** The PostgreSQL server's `statement_timestamp()` / `clock_timestamp()`. */
  postgresqlServer: 'postgresql.server',
} as const;

/** Which native primitive proves the snapshot. */
export const SnapshotAuthority = {
  /** A REPEATABLE READ transaction's own snapshot (`pg_current_snapshot()`). */
  repeatableRead: 'postgresql.repeatable_read',
  /** A snapshot exported by `pg_export_snapshot()` and imported by other sessions. */
  exportedSnapshot: 'postgresql.exported_snapshot',
} as const;

const utcTimestamp = z.unknown().transform((value, ctx) => {
  const checked = checkUtcTimestamp(value);
  if (checked.ok) return checked.value;
  ctx.addIssue({ code: 'custom', message: checked.reason, params: { code: checked.code } });
  return z.NEVER;
});

/**
 * Row evidence of a read that wrote no file (internal query: `INSERT … SELECT` on the target
 * session): the rows the statement moved, and no bytes or checksum, because none exist.
 */
export const rowEvidenceSchema = z.object({
  name: z.string().min(1),
  rows: z.number().int().nonnegative(),
  bytes: z.null(),
  sha256: z.null(),
});
export type RowEvidence = z.infer<typeof rowEvidenceSchema>;
export type Evidence = FileReceipt | RowEvidence;

const authorityName = z.string().trim().min(1).max(128);

function invariant(ctx: z.RefinementCtx, code: ErrorCode, message: string): void {
  ctx.addIssue({ code: 'custom', message, params: { code } });
}

/** The receipt schema, invariants included. Parse with {@link createReceipt} to get a frozen value. */
export const extractionLifecycleReceiptSchema = z
  .object({
    extractionStartedAt: utcTimestamp,
    clockAuthority: authorityName,
    extractionCompletedAt: utcTimestamp.nullable(),
    snapshotAcquiredAt: utcTimestamp.nullable(),
    snapshotAuthority: authorityName.nullable(),
    sourceToken: z.string().nullable(),
    /**
     * Whether all the evidence was read at one point in time. `false`: separate sessions read at
     * different times (generic sources); absent from receipts whose snapshot fields say it.
     */
    pointInTime: z.boolean().optional(),
    evidence: z.array(z.union([fileReceiptSchema, rowEvidenceSchema])),
  })
  .superRefine((r, ctx) => {
    const started = utcMicros(r.extractionStartedAt);
    if (r.extractionCompletedAt !== null && utcMicros(r.extractionCompletedAt) < started) {
      invariant(ctx, ErrorCode.RECEIPT_COMPLETED_BEFORE_START, 'extractionCompletedAt is before extractionStartedAt');
    }
    if (r.snapshotAcquiredAt !== null) {
      const snap = utcMicros(r.snapshotAcquiredAt);
      if (snap < started) invariant(ctx, ErrorCode.RECEIPT_SNAPSHOT_BEFORE_START, 'snapshotAcquiredAt is before extractionStartedAt');
      if (r.extractionCompletedAt !== null && snap > utcMicros(r.extractionCompletedAt)) {
        invariant(ctx, ErrorCode.RECEIPT_SNAPSHOT_AFTER_COMPLETION, 'snapshotAcquiredAt is after extractionCompletedAt');
      }
      if (r.snapshotAuthority === null) invariant(ctx, ErrorCode.RECEIPT_SNAPSHOT_WITHOUT_AUTHORITY, 'snapshotAcquiredAt without snapshotAuthority');
    } else if (r.snapshotAuthority !== null) {
      invariant(ctx, ErrorCode.RECEIPT_SNAPSHOT_AUTHORITY_WITHOUT_SNAPSHOT, 'snapshotAuthority without snapshotAcquiredAt');
    }
    if (r.sourceToken !== null) {
      if (r.sourceToken.trim() === '') invariant(ctx, ErrorCode.RECEIPT_SOURCE_TOKEN_EMPTY, 'sourceToken is empty');
      else if (!/^sha256:[0-9a-f]{64}$/.test(r.sourceToken)) invariant(ctx, ErrorCode.RECEIPT_INVALID, 'sourceToken is not a sha256 digest');
      if (r.snapshotAcquiredAt === null) invariant(ctx, ErrorCode.RECEIPT_SOURCE_TOKEN_WITHOUT_SNAPSHOT, 'sourceToken without a snapshot');
    }
    if (r.pointInTime === true && r.snapshotAuthority === null) {
      invariant(ctx, ErrorCode.RECEIPT_POINT_IN_TIME_WITHOUT_SNAPSHOT, 'pointInTime without a snapshot authority');
    }
  });

/** A frozen, validated receipt. */
export type ExtractionLifecycleReceipt = Readonly<
  Omit<z.output<typeof extractionLifecycleReceiptSchema>, 'evidence'> & { evidence: readonly Readonly<Evidence>[] }
>;

/** Input accepted by {@link createReceipt}: timestamps may be `Date`s or ISO strings. */
export interface ReceiptFields {
  extractionStartedAt: string | Date;
  clockAuthority: string;
  extractionCompletedAt?: string | Date | null;
  snapshotAcquiredAt?: string | Date | null;
  snapshotAuthority?: string | null;
  sourceToken?: string | null;
  pointInTime?: boolean;
  evidence?: readonly Evidence[];
}

/** Validates `fields` and returns a deeply frozen receipt, or throws the first invariant's code. */
export function createReceipt(fields: ReceiptFields): ExtractionLifecycleReceipt {
  const parsed = extractionLifecycleReceiptSchema.safeParse({
    extractionCompletedAt: null,
    snapshotAcquiredAt: null,
    snapshotAuthority: null,
    sourceToken: null,
    evidence: [],
    ...fields,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const code = (issue as { params?: { code?: ErrorCode } } | undefined)?.params?.code ?? ErrorCode.RECEIPT_INVALID;
    const field = issue?.path.join('.') || undefined;
    throw new PgExtractError(code, `invalid extraction receipt: ${field ? `${field}: ` : ''}${issue?.message ?? 'unknown'}`, { field });
  }
  const evidence = Object.freeze(parsed.data.evidence.map((e) => Object.freeze({ ...e })));
  return Object.freeze({ ...parsed.data, evidence });
}

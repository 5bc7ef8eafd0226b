/**
 * The target owner's commit report: one schema for the client, the CLI, and the workflow's signal
 * and update. Pure module (zod and error codes only), safe to import from workflow code.
 */
import { z } from 'zod';
import { ErrorCode, PgExtractError } from '../errors';

/** Own enumerable properties only: an inherited `outcome` is not a report, an own `__proto__` key is an extra key. */
const ownProperties = (raw: unknown): unknown =>
  raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? Object.fromEntries(Object.entries(raw)) : raw;

export const commitReportSchema = z.preprocess(
  ownProperties,
  z.strictObject({
    outcome: z.enum(['committed', 'failed', 'unknown']),
    /** The target owner's own id for the load, recorded for audit. */
    operationId: z.string().max(200).optional(),
  }),
);

export type TargetCommit = z.infer<typeof commitReportSchema>;
export type TargetCommitOutcome = TargetCommit['outcome'];

/** Parses a report or throws INPUT_INVALID naming the first bad field (`input` for the report as a whole). */
export function parseCommitReport(raw: unknown): TargetCommit {
  const parsed = commitReportSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join('.') || 'input';
  throw new PgExtractError(ErrorCode.INPUT_INVALID, `${field}: ${issue.message}`, { field });
}

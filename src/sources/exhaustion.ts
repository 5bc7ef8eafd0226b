/**
 * The rule that a read completes only after exhaustion: one receipted output per planned range.
 * Every adapter checks it in close('success') before its receipt records completion.
 */
import { ErrorCode, PgExtractError } from '../errors';
import type { FileEvidence } from '../lifecycle/receipt';
import type { ReadPlan } from './source-adapter';

export function checkExhausted(plan: ReadPlan, evidence: readonly FileEvidence[]): void {
  if (evidence.length !== plan.ranges.length) {
    throw new PgExtractError(ErrorCode.EXTRACTION_INCOMPLETE, `${evidence.length} of ${plan.ranges.length} planned ranges are receipted: the read is not exhausted`);
  }
}

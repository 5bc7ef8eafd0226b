/**
 * The rule that a read completes only after exhaustion: one receipted output per planned range.
 * Every adapter checks it in close('success') before its receipt records completion.
 */
import { ErrorCode, PgExtractError } from '../errors';
import type { FileEvidence } from '../lifecycle/receipt';

export function checkExhausted(plannedRanges: number, evidence: readonly FileEvidence[]): void {
  if (evidence.length !== plannedRanges) {
    throw new PgExtractError(ErrorCode.EXTRACTION_INCOMPLETE, `${evidence.length} of ${plannedRanges} planned ranges are receipted: the read is not exhausted`);
  }
}

/**
 * The rule that a read completes only after exhaustion: every planned range read to its end and
 * receipted (one output per range, or a sequence of batched files, none for an empty range).
 * Every adapter checks it in close('success') before its receipt records completion.
 */
import { ErrorCode, PgExtractError } from '../errors';
import type { FileReceipt } from '../contract/file-receipt';

/** `rangesRead`: how many planned ranges were read to their end (one output each unless batched). */
export function checkExhausted(plannedRanges: number, evidence: readonly FileReceipt[], rangesRead = evidence.length): void {
  if (rangesRead !== plannedRanges) {
    throw new PgExtractError(ErrorCode.EXTRACTION_INCOMPLETE, `${rangesRead} of ${plannedRanges} planned ranges are receipted: the read is not exhausted`);
  }
}

/**
 * The one mapping to terminal outcomes: from the target owner's report, and from a load failure.
 * For a failure, an explicit outcome attached to the error (or to any error in its cause chain)
 * wins; then its disposition; anything unknown is an abort, because an unclassified failure did
 * not commit.
 */
import type { TargetCommitOutcome } from '../contract/commit-report';
import { causes } from '../errors';
import { isTerminalOutcome, type TerminalOutcome } from './terminal';

/** How a failed load left the target. */
export const FailureDisposition = {
  /** Nothing committed; files may go. */
  cleanupSafe: 'cleanup_safe',
  /** The primary write committed; only a secondary step failed. */
  committedSecondaryOnly: 'committed_secondary_only',
  /** The target state is unprovable; keep the evidence. */
  preserveEvidence: 'preserve_evidence',
} as const;
export type FailureDisposition = (typeof FailureDisposition)[keyof typeof FailureDisposition];

const BY_DISPOSITION: Record<FailureDisposition, TerminalOutcome> = {
  cleanup_safe: 'abort',
  committed_secondary_only: 'success',
  preserve_evidence: 'retain_commit_unknown',
};

/** Returns the outcome for `err`. */
export function outcomeForFailure(err: unknown): TerminalOutcome {
  let disposition: TerminalOutcome | undefined;
  for (const e of causes(err)) {
    const { terminalOutcome, disposition: d } = e as { terminalOutcome?: unknown; disposition?: unknown };
    if (isTerminalOutcome(terminalOutcome)) return terminalOutcome;
    if (disposition === undefined && typeof d === 'string' && d in BY_DISPOSITION) disposition = BY_DISPOSITION[d as FailureDisposition];
  }
  return disposition ?? 'abort';
}

/** The outcome a target owner's report warrants. A switch, not a lookup on a plain object: nothing inherited can pass for an outcome. */
export function outcomeForCommit(outcome: TargetCommitOutcome): TerminalOutcome {
  switch (outcome) {
    case 'committed':
      return 'success';
    case 'failed':
      return 'abort';
    case 'unknown':
      return 'retain_commit_unknown';
  }
}

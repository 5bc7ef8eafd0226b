/**
 * What the built-in loader reports: the target owner's commit report, plus why when it did not
 * commit. The load activity returns it; the workflow decides the run's outcome from it.
 */
import type { TargetCommit } from './commit-report';

/** Longest `message` a load report carries: it is kept in the workflow's history and result. */
export const LOAD_MESSAGE_LIMIT = 2000;

export interface LoadReport extends TargetCommit {
  /** Why it did not commit, as a stable code (`SQLSTATE_23505`, `TARGET_TYPE_MISMATCH`). */
  reason: string | null;
  rows: number | null;
  /** The error that ended a load that did not commit, for people (which column, which value); absent otherwise. */
  message?: string;
}

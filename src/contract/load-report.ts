/**
 * What the built-in loader reports: the target owner's commit report, plus why when it did not
 * commit. The load activity returns it; the workflow decides the run's outcome from it.
 */
import type { TargetCommit } from './commit-report';

export interface LoadReport extends TargetCommit {
  reason: string | null;
  rows: number | null;
}

/**
 * The run's terminal step: wait for the commit report (or the deadline, or a cancellation), decide
 * the one terminal outcome, and release or retain the files. Returns the outcome, its receipt and
 * the cancellation to rethrow, if any.
 */
import { CancellationScope, condition, isCancellation, log, patched } from '@temporalio/workflow';
import type { TargetCommit } from '../contract/commit-report';
import type { ExtractionInput } from '../contract/extraction-input';
import type { Manifest } from '../contract/extraction-types';
import type { LoadReport } from '../contract/load-report';
import { loadedWithoutFiles, runOutputs } from '../contract/run-outputs';
import { outcomeForCommit } from '../lifecycle/outcome-mapping';
import { type ArtifactTerminalReceipt, type ReleaseReport, TerminalAuthority, type TerminalOutcome } from '../lifecycle/terminal';
import { type Progress, cleanup, streamOperationId } from './extract-or-load';
import { describeFailure } from './failure-kind';
import { RETAIN_SWEEP_CAUGHT } from './patches';
import { folderOwner } from './run-key';

export interface TerminalDecision {
  outcome: TerminalOutcome;
  receipt: ArtifactTerminalReceipt;
  /** The report that decided the outcome; null when the deadline or a cancellation did (a report that comes later decides nothing). */
  decidedBy: TargetCommit | null;
  /** The cancellation that ended the wait, rethrown once the run has recorded its outcome. */
  cancelled: unknown;
}

/**
 * @param commit the first commit report so far (the handlers record it)
 * @param report the built-in loader's report, when it loaded
 * @param leftFolders earlier attempts' folders whose discard failed: discarded with the run's end, whatever it is
 */
export async function decideTerminal(
  input: ExtractionInput,
  manifest: Manifest,
  attemptFolder: string,
  commit: () => TargetCommit | null,
  report: LoadReport | null,
  { status, show }: Progress,
  leftFolders: readonly string[] = [],
): Promise<TerminalDecision> {
  status.phase = 'awaiting_commit';
  show();
  // Every extraction prepared its attempt's folder, one that wrote no file too (batched files of empty tables):
  // it goes with the run's files. A load without files (stream, internal query) prepared none.
  const folders = loadedWithoutFiles(manifest) ? [] : [attemptFolder];
  const terminal = new TerminalAuthority({
    files: runOutputs(manifest),
    releaseFiles: (paths) => cleanup.releaseOutputs({ ...folderOwner(), paths: [...paths], sweepFolders: [], discardFolders: [...folders, ...leftFolders] }),
  });
  let cancelled: unknown = null;
  let outcome: TerminalOutcome;
  let decidedBy: TargetCommit | null = null;
  try {
    const answered = await condition(() => commit() !== null, input.commitDeadlineMs);
    decidedBy = answered ? commit() : null;
    outcome = decidedBy ? outcomeForCommit(decidedBy.outcome) : 'retain_commit_unknown';
  } catch (err) {
    if (!isCancellation(err)) throw err;
    cancelled = err;
    // A load that reported before the cancellation took effect says what the target holds.
    decidedBy = report ? commit() : null;
    outcome = report ? outcomeForCommit(report.outcome) : 'abort';
  }
  status.phase = 'cleaning_up';
  status.outcome = outcome;
  show();
  const receipt = await CancellationScope.nonCancellable(async () => {
    const decided = await terminal.decide(outcome);
    // Retained files are evidence; partial temp files of retried partitions, and earlier attempts' folders, are not.
    if (outcome === 'retain_commit_unknown') {
      const sweep = cleanup.releaseOutputs({ ...folderOwner(), paths: [], sweepFolders: folders, discardFolders: [...leftFolders] });
      if (!patched(RETAIN_SWEEP_CAUGHT)) await sweep;
      else {
        await sweep.then(
          ({ failures }) => failures.length > 0 && log.warn('the retained run left files it meant to remove', { failures }),
          (err: unknown) => log.warn('the retained folder could not be swept', { reason: describeFailure(err) }),
        );
      }
    }
    if (input.target?.via === 'stream') await releaseStreamStaging(input, streamOperationId());
    return decided;
  });
  return { outcome, receipt, decidedBy, cancelled };
}

/**
 * A stream's staging tables are dropped by the load itself; this catches what it could not drop
 * (its worker vanished, or the target was unreachable then). Retried for minutes; a target still
 * unreachable after that is logged, and the next load of the same run would drop them.
 */
async function releaseStreamStaging(input: ExtractionInput, operationId: string): Promise<void> {
  try {
    await cleanup.releaseStreamStaging({ target: { name: input.target!.name, table: input.target!.table! }, operationId });
  } catch (err) {
    log.warn('stream staging tables could not be released', { reason: describeFailure(err) });
  }
}

/**
 * Decides abort for a run cancelled while it extracted, through the terminal authority as every
 * outcome is: the run has no file left to release (its attempts' discards removed what they
 * wrote), and `left` is what became of what those discards left.
 */
export function abortWhileExtracting(left: ReleaseReport): Promise<ArtifactTerminalReceipt> {
  return new TerminalAuthority({ files: [], releaseFiles: async () => left }).decide('abort');
}

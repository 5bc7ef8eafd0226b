/**
 * The run's handlers: status, manifest and terminal receipt queries, the manifest-ready update, the commit signal and
 * the commit update. They read the run's state and record the first commit report; the commit
 * update answers with the terminal receipt once it exists.
 */
import { HandlerUnfinishedPolicy } from '@temporalio/common';
import { ApplicationFailure, CancellationScope, condition, log, patched, setHandler } from '@temporalio/workflow';
import { type TargetCommit, parseCommitReport } from '../contract/commit-report';
import { commitUpdate, manifestQuery, manifestReadyUpdate, statusQuery, targetCommitSignal, terminalReceiptQuery } from '../contract/definitions';
import type { ExtractionStatus, Manifest } from '../contract/extraction-types';
import { ErrorCode } from '../errors';
import type { ArtifactTerminalReceipt } from '../lifecycle/terminal';
import { DECIDED_BEFORE_CANCEL, STRICT_COMMIT_SIGNAL } from './patches';

/** What the handlers see of a run; the workflow sets each part as its steps return. */
export interface RunState {
  readonly status: ExtractionStatus;
  manifest: Manifest | null;
  /** The first commit report: the target owner's, or the built-in loader's. */
  commit: TargetCommit | null;
  terminalReceipt: ArtifactTerminalReceipt | null;
}

/** The update validator's check: a bad report is rejected with INPUT_INVALID, nothing written to history. */
function checkCommit(raw: unknown): void {
  try {
    parseCommitReport(raw);
  } catch (err) {
    throw ApplicationFailure.nonRetryable((err as Error).message, ErrorCode.INPUT_INVALID);
  }
}

/** The signal's report, or null (with a warning) for a malformed one: no client can fail a workflow task. */
function signalledCommit(raw: unknown): TargetCommit | null {
  try {
    return parseCommitReport(raw);
  } catch (err) {
    // Before reports were strict, a signal's extra keys were ignored; runs that took such a signal replay that way.
    if (!patched(STRICT_COMMIT_SIGNAL)) {
      const { outcome, operationId } = (raw ?? {}) as Partial<Record<string, unknown>>;
      try {
        return parseCommitReport(operationId === undefined ? { outcome } : { outcome, operationId });
      } catch {
        // Not even its two keys make a report.
      }
    }
    log.warn('ignored a malformed targetCommit signal', { reason: (err as Error).message });
    return null;
  }
}

export function setRunHandlers(state: RunState): void {
  const { status } = state;
  setHandler(statusQuery, () => status);
  setHandler(manifestQuery, () => state.manifest);
  // Queries add no command: runs recorded before it answer it too, as they replay.
  setHandler(terminalReceiptQuery, () => state.terminalReceipt);
  // A run that fails before its manifest leaves the waiter's update unfinished: its client then reads the failure.
  setHandler(manifestReadyUpdate, async () => condition(() => state.manifest !== null).then(() => true), { unfinishedPolicy: HandlerUnfinishedPolicy.ABANDON });
  setHandler(targetCommitSignal, (raw) => {
    const report = signalledCommit(raw);
    if (!report) return;
    if (status.phase !== 'awaiting_commit') log.warn('ignored a targetCommit signal outside awaiting_commit', { phase: status.phase });
    else state.commit ??= report;
  });
  setHandler(
    commitUpdate,
    // The validator parsed it (validators do not run on replay, so accepted reports replay as they ran).
    async (c) => {
      state.commit ??= c;
      // The receipt comes whatever happens next (a cancellation too is decided, as an abort): the caller gets it.
      const decided = () => condition(() => state.terminalReceipt !== null);
      await (patched(DECIDED_BEFORE_CANCEL) ? CancellationScope.nonCancellable(decided) : decided());
      return state.terminalReceipt!;
    },
    {
      validator: (c) => {
        checkCommit(c);
        if (status.phase === 'planning' || status.phase === 'extracting' || status.phase === 'loading') {
          throw ApplicationFailure.nonRetryable(`extraction is still ${status.phase}`, ErrorCode.NOT_AWAITING_COMMIT);
        }
      },
    },
  );
}

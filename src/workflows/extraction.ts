/**
 * extractionWorkflow: extract at one consistent point in time (fresh snapshots on holder loss,
 * bounded), expose the manifest, wait for the target owner, and record exactly one terminal
 * outcome — `success`, `abort`, or `retain_commit_unknown` (files kept as evidence). The steps
 * live beside it: the handlers, the extract-or-load step and the terminal step.
 */
import { CancellationScope, allHandlersFinished, condition, isCancellation, log, patched } from '@temporalio/workflow';
import type { ExtractionInput } from '../contract/extraction-input';
import type { AttemptRecord, ExtractionResult, ExtractionStatus } from '../contract/extraction-types';
import type { ReleaseReport } from '../lifecycle/terminal';
import { runLabel } from '../contract/table-selection';
import { attemptFolders, discardLeftFolders, extractOrLoad, type Progress } from './extract-or-load';
import { type RunState, setRunHandlers } from './handlers';
import { requireParsedInput } from './input-shape';
import { manifestInResult } from './payload-budget';
import { abortWhileExtracting, decideTerminal } from './terminal-step';
import { countAttempt, countOutcome, publishStatus } from './visibility';
import { CANCELLED_EXTRACTION_ABORTS, DECIDED_BEFORE_CANCEL, FAILED_RUN_DISCARDS_LEFT, FAILED_RUN_PHASE } from './patches';

export async function extractionWorkflow(input: ExtractionInput): Promise<ExtractionResult> {
  requireParsedInput(input);
  const status: ExtractionStatus = {
    phase: 'planning',
    table: runLabel(input),
    attempt: 0,
    partitionsDone: 0,
    partitionsTotal: 0,
    rows: 0,
    bytes: 0,
    outcome: null,
  };
  const state: RunState = { status, manifest: null, commit: null, terminalReceipt: null };
  setRunHandlers(state);
  const attemptFolder = attemptFolders(input);
  const discards: AttemptRecord[] = [];
  const progress: Progress = {
    status,
    show: () => publishStatus(status),
    published: (manifest) => (state.manifest = manifest),
    discarded: (attempt) => discards.push(attempt),
  };

  const { manifest, attempts, report } = await extractOrLoad(input, attemptFolder, progress).catch(async (err: unknown) => {
    // A run that ends here has no terminal step to discard what failed discards left (its attempts' files): it does.
    const failed = discards.filter((a) => a.cleanupErrorCode !== null).map((a) => ({ path: attemptFolder(a.attempt), code: a.cleanupErrorCode! }));
    const left: ReleaseReport =
      failed.length > 0 && patched(FAILED_RUN_DISCARDS_LEFT) ? await discardLeftFolders(failed.map((f) => f.path)) : { deleted: [], failures: failed };
    // A failed run's error names its attempts' first discards only: what stays for good is said here (a cancelled run's receipt says it).
    if (left.failures.length > 0) log.warn('folders of failed attempts could not be discarded', { failures: left.failures });
    // Failed: the phase it was in (extracting, in Web UI's details and search attributes, and in status) would stay
    // for good on a run that no longer does anything. Runs that failed before replay without it.
    if (!isCancellation(err) && patched(FAILED_RUN_PHASE)) {
      status.phase = 'failed';
      progress.show();
    }
    // Cancelled while extracting: the attempt discarded its files, and the run records that it aborted.
    if (isCancellation(err) && patched(CANCELLED_EXTRACTION_ABORTS)) {
      state.terminalReceipt = await abortWhileExtracting(left);
      Object.assign(status, { phase: 'done', outcome: 'abort' });
      countOutcome('abort');
      progress.show();
    }
    throw err;
  });
  const load = report ? { outcome: report.outcome, reason: report.reason, rows: report.rows, ...(report.message ? { message: report.message } : {}) } : null;
  if (report) state.commit = { outcome: report.outcome, operationId: report.operationId };

  const { outcome, receipt, decidedBy, cancelled } = await decideTerminal(
    input,
    manifest,
    attemptFolder(manifest.attempt),
    () => state.commit,
    report,
    progress,
    attempts.filter((a) => a.attempt !== manifest.attempt && a.cleanupErrorCode !== null).map((a) => attemptFolder(a.attempt)),
  );
  state.terminalReceipt = receipt;
  countOutcome(outcome);
  for (const attempt of attempts) countAttempt(attempt);
  status.phase = 'done';
  progress.show();
  // Once the outcome is recorded a cancellation changes nothing: the run completes with its receipt.
  // Runs cancelled here before this ended cancelled, and replay so.
  if (patched(DECIDED_BEFORE_CANCEL)) await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  else await condition(allHandlersFinished);
  if (cancelled) throw cancelled;
  return {
    manifest: manifestInResult(input, manifest),
    extractionReceipt: manifest.extractionReceipt,
    terminalReceipt: receipt,
    attempts,
    operationId: decidedBy?.operationId ?? null,
    load,
  };
}

/**
 * extractionWorkflow: extract at one consistent point in time (fresh snapshots on holder loss,
 * bounded), expose the manifest, wait for the target owner, and record exactly one terminal
 * outcome — `success`, `abort`, or `retain_commit_unknown` (files kept as evidence).
 */
import {
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { MainActivities } from '../activities';
import type { LoadReport } from '../activities/load';
import { ErrorCode } from '../errors';
import { type ArtifactTerminalReceipt, TerminalAuthority, type TerminalOutcome } from '../lifecycle/terminal';
import { type TargetCommit, type TargetCommitOutcome, commitReportSchema, parseCommitReport } from '../shared/commit-report';
import { commitUpdate, manifestQuery, statusQuery, targetCommitSignal } from '../shared/definitions';
import type { ExtractionInput } from '../shared/extraction-input';
import type { AttemptRecord, ExtractionResult, ExtractionStatus, Manifest } from '../shared/extraction-types';
import { runOutputs } from '../shared/run-outputs';
import { isTableSet, runLabel } from '../shared/table-selection';
import { type AttemptScope, partitionedAttempt, wholeCopyAttempt, withDataPackage } from './attempts';
import { describeFailure, isSnapshotLost } from './failure-kind';
import { TABLE_SET_LOAD, runLoad } from './loader';
import { tableSetAttempt } from './table-set';
import { countAttempt, countOutcome, publishStatus } from './visibility';

/** A switch, not a lookup on a plain object: nothing inherited can pass for an outcome. */
function terminalOutcomeOf(outcome: TargetCommitOutcome): TerminalOutcome {
  switch (outcome) {
    case 'committed':
      return 'success';
    case 'failed':
      return 'abort';
    case 'unknown':
      return 'retain_commit_unknown';
  }
}

const cleanup = proxyActivities<MainActivities>({ startToCloseTimeout: '5 minutes', retry: { maximumAttempts: 10 } });

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
    if (!patched('strict-commit-signal')) {
      const { outcome, operationId } = (raw ?? {}) as Partial<Record<string, unknown>>;
      const lenient = commitReportSchema.safeParse(operationId === undefined ? { outcome } : { outcome, operationId });
      if (lenient.success) return lenient.data;
    }
    log.warn('ignored a malformed targetCommit signal', { reason: (err as Error).message });
    return null;
  }
}

/**
 * Names this run's attempt folders: `<outDir, else the sanitized workflow id>/<runId>/attempt-N`,
 * so no other run (same --out, a reused or look-alike workflow id) can share one.
 */
function attemptFolders(input: ExtractionInput): (attempt: number) => string {
  const { workflowId, runId } = workflowInfo();
  const parent = input.outDir ?? workflowId.replace(/[^A-Za-z0-9._-]/g, '_');
  // Runs started before run folders existed keep their folders when they replay.
  const run = patched('run-folders') ? `/${runId}` : '';
  return (attempt) => `${parent}${run}/attempt-${attempt}`;
}

export async function extractionWorkflow(input: ExtractionInput): Promise<ExtractionResult> {
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
  const progress = (): void => publishStatus(status);
  let manifest: Manifest | null = null;
  // Assigned by handlers; the cast keeps TypeScript from narrowing it to null here.
  let commit = null as TargetCommit | null;
  let terminalReceipt = null as ArtifactTerminalReceipt | null;
  const attempts: AttemptRecord[] = [];

  setHandler(statusQuery, () => status);
  setHandler(manifestQuery, () => manifest);
  setHandler(targetCommitSignal, (raw) => {
    const report = signalledCommit(raw);
    if (!report) return;
    if (status.phase !== 'awaiting_commit') log.warn('ignored a targetCommit signal outside awaiting_commit', { phase: status.phase });
    else commit ??= report;
  });
  setHandler(
    commitUpdate,
    // The validator parsed it (validators do not run on replay, so accepted reports replay as they ran).
    async (c) => {
      commit ??= c;
      await condition(() => terminalReceipt !== null);
      return terminalReceipt!;
    },
    {
      validator: (c) => {
        checkCommit(c);
        if (status.phase === 'planning' || status.phase === 'extracting' || status.phase === 'loading') {
          throw ApplicationFailure.nonRetryable(`extraction is still ${status.phase}`, 'NOT_AWAITING_COMMIT');
        }
      },
    },
  );

  const { workflowId, runId } = workflowInfo();
  const attemptFolder = attemptFolders(input);
  // Assigned by `loaded`; the cast keeps TypeScript from narrowing it to null here.
  let load = null as ExtractionResult['load'];
  const loaded = (report: LoadReport): void => {
    load = { outcome: report.outcome, reason: report.reason, rows: report.rows };
    commit = { outcome: report.outcome, operationId: report.operationId };
  };
  const via = input.target?.via;
  // A stream's operation id names its staging tables on the target, released at the end whatever happened.
  const streamOperationId = `${workflowId}:${runId}:stream`;
  if (via === 'internal' || via === 'stream') {
    // No files. Internal: one INSERT … SELECT on the target session, no snapshot claim. Stream: each
    // partition's COPY TO flows into a COPY FROM on the target, inside one exported snapshot.
    status.phase = 'loading';
    progress();
    const operationId = via === 'stream' ? streamOperationId : `${workflowId}:${runId}:internal`;
    const { report, receipt, snapshotDigest } = await runLoad(
      input,
      operationId,
      (loader) =>
        via === 'stream' ? loader.loadStream({ input, operationId }) : loader.loadInternal({ input, operationId }).then((loaded) => ({ ...loaded, snapshotDigest: null })),
      (report) => ({ report, receipt: null, snapshotDigest: null }),
    );
    manifest = {
      workflowId,
      table: runLabel(input),
      attempt: 1,
      strategy: via === 'stream' ? 'stream_copy' : 'internal_query',
      coordinatorPid: null,
      snapshotDigest,
      files: [],
      totals: { rows: report.rows ?? 0, bytes: 0 },
      columns: null,
      primaryKey: null,
      dataPackage: null,
      extractionReceipt: receipt,
    };
    attempts.push({ attempt: 1, result: 'completed', reason: null, releasedFiles: 0, cleanupErrorCode: null });
    loaded(report);
  } else {
    status.phase = 'extracting';
    progress();
    manifest = await extractWithFreshSnapshots(input, attemptFolder, status, attempts, progress);
    if (input.target) {
      status.phase = 'loading';
      progress();
      const operationId = `${workflowId}:${runId}:attempt-${manifest.attempt}`;
      const format = { format: input.format, header: input.header, gzip: input.gzip };
      const { name, mode } = input.target;
      // Before TABLE_SET_LOAD a set's files all went to target.table (the input now refuses that); such runs replay so.
      if (isTableSet(input) && patched(TABLE_SET_LOAD)) {
        const target = { name, mode, ...(input.target.schema !== undefined ? { schema: input.target.schema } : { tables: input.target.tables }) };
        const files = manifest.files.map(({ table, path, rows, sha256 }) => ({ table: table!, path, rows, sha256 }));
        loaded(await runLoad(input, operationId, (loader) => loader.loadTargetSet({ target, files, format, operationId }), (report) => report));
      } else {
        const files = manifest.files.map(({ path, rows, sha256 }) => ({ path, rows, sha256 }));
        const request = { target: { name, table: input.target.table!, mode }, files, format, operationId };
        loaded(await runLoad(input, operationId, (loader) => loader.loadTarget(request), (report) => report));
      }
    }
  }

  status.phase = 'awaiting_commit';
  progress();
  const folders = manifest.files.length ? [attemptFolder(manifest.attempt)] : [];
  const terminal = new TerminalAuthority({
    files: runOutputs(manifest),
    releaseFiles: (paths) => cleanup.releaseOutputs({ paths: [...paths], sweepFolders: [], discardFolders: folders }),
  });
  let cancelled: unknown = null;
  let outcome: TerminalOutcome;
  try {
    const answered = await condition(() => commit !== null, input.commitDeadlineMs);
    outcome = answered ? terminalOutcomeOf(commit!.outcome) : 'retain_commit_unknown';
  } catch (err) {
    if (!isCancellation(err)) throw err;
    cancelled = err;
    // A load that reported before the cancellation took effect says what the target holds.
    outcome = load ? terminalOutcomeOf(load.outcome) : 'abort';
  }
  status.phase = 'cleaning_up';
  status.outcome = outcome;
  progress();
  terminalReceipt = await CancellationScope.nonCancellable(async () => {
    const receipt = await terminal.decide(outcome);
    // Retained files are evidence; partial temp files of retried partitions are not.
    if (outcome === 'retain_commit_unknown') await cleanup.releaseOutputs({ paths: [], sweepFolders: folders, discardFolders: [] });
    if (via === 'stream') await releaseStreamStaging(input, streamOperationId);
    return receipt;
  });
  countOutcome(outcome);
  for (const attempt of attempts) countAttempt(attempt);
  status.phase = 'done';
  progress();
  await condition(allHandlersFinished);
  if (cancelled) throw cancelled;
  // A set's files[] (hundreds of bytes per file) would push the result past Temporal's 2 MB payload limit at
  // a few thousand files; its receipt's evidence still names every file with rows, bytes and sha256.
  const result = isTableSet(input) ? { ...manifest, files: [], filesInResult: false as const } : manifest;
  return { manifest: result, extractionReceipt: manifest.extractionReceipt, terminalReceipt, attempts, operationId: commit?.operationId ?? null, load };
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

async function extractWithFreshSnapshots(
  input: ExtractionInput,
  attemptFolder: (attempt: number) => string,
  status: ExtractionStatus,
  attempts: AttemptRecord[],
  progress: () => void,
): Promise<Manifest> {
  for (let attempt = 1; ; attempt++) {
    const scope: AttemptScope = { attempt, folder: attemptFolder(attempt), planned: [] };
    Object.assign(status, { attempt, partitionsDone: 0, partitionsTotal: 0, rows: 0, bytes: 0 });
    try {
      const files =
        isTableSet(input) && patched('table-set')
          ? await tableSetAttempt(input, scope, status, progress)
          : input.partitions === 1
            ? await wholeCopyAttempt(input, scope, status, progress)
            : await partitionedAttempt(input, scope, status, progress);
      const manifest = await withDataPackage(input, scope, files);
      attempts.push({ attempt, result: 'completed', reason: null, releasedFiles: 0, cleanupErrorCode: null });
      return manifest;
    } catch (err) {
      const discarded = await discardAttempt(scope);
      const lost = isSnapshotLost(err);
      attempts.push({ attempt, result: lost ? 'snapshot_lost' : 'failed', reason: describeFailure(err), ...discarded });
      log.warn('extraction attempt failed', { attempt, reason: describeFailure(err), cleanupErrorCode: discarded.cleanupErrorCode });
      if (!lost || isCancellation(err)) throw err;
      if (attempt >= input.maxSnapshotAttempts) {
        throw ApplicationFailure.create({
          type: ErrorCode.ATTEMPTS_EXHAUSTED,
          message: `the snapshot was lost ${attempt} times`,
          nonRetryable: true,
          details: [attempts],
        });
      }
    }
  }
}

/**
 * Nothing of a failed attempt survives: its files would mix two snapshots. A cleanup failure is
 * recorded on the attempt, never thrown over the attempt's own failure or its fresh retry.
 */
async function discardAttempt(scope: AttemptScope): Promise<Pick<AttemptRecord, 'releasedFiles' | 'cleanupErrorCode'>> {
  try {
    const report = await CancellationScope.nonCancellable(() =>
      cleanup.releaseOutputs({ paths: scope.planned, sweepFolders: [], discardFolders: [scope.folder] }),
    );
    return { releasedFiles: report.deleted.length, cleanupErrorCode: report.failures[0]?.code ?? null };
  } catch (cleanupErr) {
    // Runs whose discard failed before this was recorded ended with the cleanup's failure; they replay so.
    if (!patched('discard-failure-recorded')) throw cleanupErr;
    return { releasedFiles: 0, cleanupErrorCode: describeFailure(cleanupErr) };
  }
}

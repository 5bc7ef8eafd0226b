/**
 * The client side: start an extraction, wait for its manifest, report the target commit, read
 * status. Input is validated here (and again by every activity) before anything is started.
 */
import { randomBytes } from 'node:crypto';
import {
  Client,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { ErrorCode, PgExtractError } from './errors';
import { redactUrl } from './redact';
import type { ArtifactTerminalReceipt, TerminalOutcome } from './lifecycle/terminal';
import { parseCommitReport } from './contract/commit-report';
import { runLabel } from './contract/table-selection';
import {
  SearchAttributes,
  batchStatusQuery,
  commitUpdate,
  manifestQuery,
  manifestReadyUpdate,
  statusQuery,
  terminalReceiptQuery,
} from './contract/definitions';
import { type ExtractionRequest, parseNewRunInput } from './contract/extraction-input';
import { fileCompression } from './contract/formats';
import { isRunId } from './contract/identifiers';
import type { ExtractionResult, ExtractionStatus, Manifest, Phase, TargetCommit } from './contract/extraction-types';
import { type FailureSummary, failureSummary } from './failure-summary';
import type { extractionWorkflow } from './workflows';

/** Options for {@link startExtraction}. */
export interface StartOptions {
  taskQueue: string;
  /** @default `pg-extract-<table>-<time>-<6 random hex digits>` (two runs started in one millisecond get two ids) */
  workflowId?: string;
}

/**
 * The longest workflow id a run takes: the id names the run's folder (a path component of at most 255
 * bytes), and with its run id and attempt each snapshot attempt's key and each load's operation id
 * (at most 300 characters).
 */
export const MAX_WORKFLOW_ID_LENGTH = 200;

/** Refuses a workflow id the run could not carry, before anything starts. */
export function checkWorkflowId(workflowId: string | undefined): void {
  if (workflowId !== undefined && (workflowId.length === 0 || workflowId.length > MAX_WORKFLOW_ID_LENGTH)) {
    throw new PgExtractError(
      ErrorCode.INPUT_INVALID,
      `a workflow id has 1 to ${MAX_WORKFLOW_ID_LENGTH} characters (it names the run's folder, attempts and loads); this one has ${workflowId.length}`,
      { field: 'workflowId' },
    );
  }
  // Without --out the id names the run's folder under the output root, where `..` would be its parent.
  if (workflowId === '.' || workflowId === '..')
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `a workflow id of ${JSON.stringify(workflowId)} would name no folder of its own`, {
      field: 'workflowId',
    });
}

export async function startExtraction(
  client: Client,
  request: ExtractionRequest,
  options: StartOptions,
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof extractionWorkflow>> {
  const input = parseNewRunInput(request);
  checkWorkflowId(options.workflowId);
  const label = runLabel(input);
  // The label cut to 120 characters: a long quoted name would pass the id's limit (and a file name's, as the run's folder).
  const workflowId =
    options.workflowId ??
    `pg-extract-${Array.from(label).slice(0, 120).join('')}-${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(3).toString('hex')}`;
  const compression = fileCompression(input);
  return client.workflow.start<typeof extractionWorkflow>('extractionWorkflow', {
    taskQueue: options.taskQueue,
    workflowId,
    args: [input],
    typedSearchAttributes: [
      { key: SearchAttributes.table, value: label },
      { key: SearchAttributes.phase, value: 'planning' },
    ],
    staticSummary: `Extract ${label} (${input.partitions === 'auto' ? 'auto' : input.partitions} partitions, ${input.format}${compression === 'none' ? '' : `+${compression}`})`,
    staticDetails: `source \`${input.source}\`, commit deadline ${Math.round(input.commitDeadlineMs / 1000)} s`,
  });
}

/**
 * Waits until the manifest exists (awaiting the target commit) or the run has closed. Without
 * `onPoll` it waits in one update call (manifestReady) and then reads the manifest; a run that
 * closed or failed first, or one started before that update existed, is read by polling as
 * before. `onPoll` sees every poll's manifest (null until it exists), e.g. to draw progress.
 */
export async function waitForManifest(handle: WorkflowHandle, pollMs = 250, onPoll?: (manifest: Manifest | null) => Promise<void>): Promise<Manifest> {
  if (!onPoll) await handle.executeUpdate(manifestReadyUpdate).catch(() => false);
  for (;;) {
    const manifest = await handle.query(manifestQuery).catch(() => null);
    await onPoll?.(manifest);
    if (manifest) return manifest;
    if ((await handle.describe()).status.name !== 'RUNNING') return ((await handle.result()) as ExtractionResult).manifest;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** Refuses a run id that names no run (Temporal would answer a malformed one with its own error), before any call. */
export function checkRunId(runId: string | undefined): void {
  if (runId !== undefined && !isRunId(runId)) {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `a run id is a UUID (start --json prints it); not ${JSON.stringify(runId.slice(0, 60))}`, {
      field: 'runId',
    });
  }
}

/**
 * Reports the target commit and returns the terminal receipt. A closed run answers from its
 * result, so a late or repeated report still gets the one receipt: the update goes first, and its
 * failure is looked at only then, so a run that closes while the report is on its way answers too.
 * `runId` (the manifest's, from `start --json`) addresses that run of the workflow id: without it
 * the report goes to the id's latest run, which may be a later run than the files' (a workflow id
 * is reused once its run has closed).
 */
export async function reportCommit(client: Client, workflowId: string, commit: TargetCommit, runId?: string): Promise<ArtifactTerminalReceipt> {
  // Validate before any call: a bad report has no side effect.
  const report = parseCommitReport(commit);
  checkRunId(runId);
  const handle = client.workflow.getHandle(workflowId, runId);
  try {
    return await handle.executeUpdate(commitUpdate, {
      args: [report],
      ...(report.operationId ? { updateId: `target-commit:${report.operationId}` } : {}),
    });
  } catch (err) {
    // The run refused the report (NOT_AWAITING_COMMIT, INPUT_INVALID) or failed handling it: that is the answer.
    if (err instanceof WorkflowUpdateFailedError) throw err;
    // Else it may have closed, or never been: its description tells. If that fails too, the update's error is the one to see.
    const description = await handle.describe().catch((describeErr: unknown) => {
      if (describeErr instanceof WorkflowNotFoundError)
        throw new PgExtractError(ErrorCode.INPUT_INVALID, `no workflow ${workflowId}${runId ? ` run ${runId}` : ''}`, { field: 'workflowId' });
      throw err;
    });
    if (description.status.name === 'RUNNING') throw err;
    if (description.status.name !== 'COMPLETED') {
      // A run cancelled before its decision decided as it closed (an abort, or what its load reported); its result cannot be read.
      const receipt = await handle.query(terminalReceiptQuery).catch(() => null);
      if (receipt) return receipt;
      // Undecided and terminated: a reset replaced it (the run id `start` printed then names the run the reset ended).
      const replacement = runId && description.status.name === 'TERMINATED' ? await replacingRun(client, workflowId, description) : null;
      if (replacement) return reportCommit(client, workflowId, report, replacement);
    }
    // A run that failed before any decision has no receipt: its failure is the answer.
    return ((await handle.result()) as ExtractionResult).terminalReceipt;
  }
}

/**
 * The run that now stands for the terminated run `ended`: the workflow id's latest run when it is
 * another run of the same chain (a reset keeps the chain's first run id; a later start of a reused
 * workflow id begins a chain of its own, and is not it), else null. That run names its folders,
 * files and load by the run the chain began with (./workflows/run-key.ts): the files are the same.
 */
async function replacingRun(client: Client, workflowId: string, ended: WorkflowExecutionDescription): Promise<string | null> {
  const chain = ended.raw.workflowExecutionInfo?.firstRunId;
  if (!chain) return null;
  const latest = await client.workflow
    .getHandle(workflowId)
    .describe()
    .catch(() => null);
  return latest && latest.runId !== ended.runId && latest.raw.workflowExecutionInfo?.firstRunId === chain ? latest.runId : null;
}

/**
 * The run's status with the progress of its running copy batch counted in: a set's run counts a
 * batch's partitions in its own status only when the whole batch ends.
 */
export async function liveStatus(handle: WorkflowHandle): Promise<ExtractionStatus> {
  const status = await handle.query(statusQuery);
  if (!status.batchWorkflowId) return status;
  // Asked after the run's status: a batch that has ended since is counted there or here, never in both.
  const batch = await handle.client
    .getHandle(status.batchWorkflowId)
    .query(batchStatusQuery)
    .catch(() => null);
  if (!batch) return status;
  return { ...status, partitionsDone: status.partitionsDone + batch.partitionsDone, rows: status.rows + batch.rows, bytes: status.bytes + batch.bytes };
}

/**
 * What `pg-extract status` shows of a run. Counts a closed run's status query cannot give (no worker
 * answered it) are null, not 0: they are not known.
 */
export type RunStatus = Omit<ExtractionStatus, 'attempt' | 'partitionsDone' | 'partitionsTotal' | 'bytes'> & {
  attempt: number | null;
  partitionsDone: number | null;
  partitionsTotal: number | null;
  bytes: number | null;
  /** RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT, … */
  workflowStatus: string;
  /** Why a run that failed (timed out, was terminated) ended: the code and words the CLI prints for it; else null. */
  failure: FailureSummary | null;
};

/** Closed runs whose result is their failure. */
const FAILED_STATUSES = new Set(['FAILED', 'TERMINATED', 'TIMED_OUT']);

export async function extractionStatus(client: Client, workflowId: string): Promise<RunStatus> {
  const handle = client.workflow.getHandle(workflowId);
  const description = await handle.describe();
  if (description.status.name === 'RUNNING') return { ...(await liveStatus(handle)), workflowStatus: 'RUNNING', failure: null };
  const failure = FAILED_STATUSES.has(description.status.name)
    ? await handle.result().then(
        () => null,
        (err: unknown) => {
          const { code, message } = failureSummary(err);
          return { code, message: redactUrl(message) };
        },
      )
    : null;
  // Queries of a closed run are answered by a worker replaying it: with none, what the run last published is in its
  // search attributes (table, phase, rows, outcome), and the rest is not known.
  const status: Omit<RunStatus, 'workflowStatus' | 'failure'> = (await handle.query(statusQuery).catch(() => null)) ?? {
    phase: (description.typedSearchAttributes.get(SearchAttributes.phase) as Phase | undefined) ?? 'done',
    table: description.typedSearchAttributes.get(SearchAttributes.table) ?? '',
    attempt: null,
    partitionsDone: null,
    partitionsTotal: null,
    rows: description.typedSearchAttributes.get(SearchAttributes.rows) ?? 0,
    bytes: null,
    outcome: (description.typedSearchAttributes.get(SearchAttributes.outcome) as TerminalOutcome | undefined) ?? null,
  };
  return { ...status, workflowStatus: description.status.name, failure };
}

/**
 * The run's work before the commit decision: either one internal query on the target (source and
 * target one database, no files), or extraction at one snapshot (fresh snapshots on holder loss,
 * bounded) followed, when a target is set, by the built-in load of its files. Returns the
 * manifest, the attempts and the loader's report; the run's live status is updated as it goes.
 */
import { ApplicationFailure, CancellationScope, isCancellation, log, patched, proxyActivities } from '@temporalio/workflow';
import type { MainActivities } from '../activities';
import type { ReleaseReport } from '../lifecycle/terminal';
import type { ExtractionInput } from '../contract/extraction-input';
import { fileCompression } from '../contract/formats';
import type { AttemptRecord, ExtractionStatus, Manifest } from '../contract/extraction-types';
import type { LoadReport } from '../contract/load-report';
import { ErrorCode } from '../errors';
import { isTableSet, runLabel } from '../contract/table-selection';
import { type AttemptEvents, type AttemptScope, partitionedAttempt, wholeCopyAttempt, withDataPackage } from './attempts';
import { describeFailure, isSnapshotLost, rootFailure } from './failure-kind';
import { type Loader, runLoad } from './loader';
import { tableSetAttempt } from './table-set';
import { requireManifestFits } from './payload-budget';
import { DISCARD_FAILURE_RECORDED, PAYLOAD_BUDGET, RUN_FOLDERS, TABLE_SET, TABLE_SET_LOAD } from './patches';
import { folderOwner, runKey } from './run-key';

/**
 * Output files: an attempt's discard, the terminal release, a stream's staging release. They
 * heartbeat, so a worker that dies in one is noticed within the heartbeat timeout, not the start-to-close.
 */
export const cleanup = proxyActivities<MainActivities>({ startToCloseTimeout: '5 minutes', heartbeatTimeout: '15 seconds', retry: { maximumAttempts: 10 } });

/** What the run did before the commit decision. */
export interface WorkDone {
  manifest: Manifest;
  attempts: AttemptRecord[];
  /** The built-in loader's report, when `target` was set. */
  report: LoadReport | null;
}

/** The run's live status and how to show it; `published` sees the manifest as soon as it exists, `discarded` each failed attempt's record. */
export interface Progress {
  readonly status: ExtractionStatus;
  show(): void;
  published(manifest: Manifest): void;
  discarded(attempt: AttemptRecord): void;
}

/**
 * Names this run's attempt folders: `<outDir, else the sanitized workflow id>/<runId>/attempt-N`,
 * so no other run (same --out, a reused or look-alike workflow id) can share one.
 */
export function attemptFolders(input: ExtractionInput): (attempt: number) => string {
  const { workflowId, runId } = runKey();
  const parent = input.outDir ?? workflowId.replace(/[^A-Za-z0-9._-]/g, '_');
  // Runs started before run folders existed keep their folders when they replay.
  const run = patched(RUN_FOLDERS) ? `/${runId}` : '';
  return (attempt) => `${parent}${run}/attempt-${attempt}`;
}

/** A stream's operation id: it names the stream's staging tables on the target, released at the end whatever happened. */
export function streamOperationId(): string {
  const { workflowId, runId } = runKey();
  return `${workflowId}:${runId}:stream`;
}

export async function extractOrLoad(input: ExtractionInput, attemptFolder: (attempt: number) => string, progress: Progress): Promise<WorkDone> {
  const { workflowId, runId } = runKey();
  const { status } = progress;
  const via = input.target?.via;
  if (via === 'internal' || via === 'stream') {
    // No files. Internal: one INSERT … SELECT on the target session, no snapshot claim. Stream: each
    // partition's COPY TO flows into a COPY FROM on the target, inside one exported snapshot.
    status.phase = 'loading';
    progress.show();
    const operationId = via === 'stream' ? streamOperationId() : `${workflowId}:${runId}:internal`;
    const { report, receipt, snapshotDigest } = await runLoad(
      input,
      operationId,
      (loader) =>
        via === 'stream'
          ? loader.loadStream({ input, operationId })
          : loader.loadInternal({ input, operationId }).then((loaded) => ({ ...loaded, snapshotDigest: null })),
      (report) => ({ report, receipt: null, snapshotDigest: null }),
    );
    // What the load moved is the run's progress (status, search attribute, Web UI): there are no files to count.
    status.rows = report.rows ?? 0;
    const manifest: Manifest = {
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
    progress.published(manifest);
    return { manifest, attempts: [{ attempt: 1, result: 'completed', reason: null, releasedFiles: 0, cleanupErrorCode: null }], report };
  }
  status.phase = 'extracting';
  progress.show();
  const { manifest, attempts } = await extractWithFreshSnapshots(input, attemptFolder, progress);
  progress.published(manifest);
  if (!input.target) return { manifest, attempts, report: null };
  status.phase = 'loading';
  progress.show();
  const operationId = `${workflowId}:${runId}:attempt-${manifest.attempt}`;
  // Without a compression the request is as it was before compression applied to CSV and binary.
  const format = {
    format: input.format,
    header: input.header,
    gzip: input.gzip,
    ...(input.compression !== undefined ? { compression: fileCompression(input) } : {}),
  };
  const { name, mode } = input.target;
  // Before TABLE_SET_LOAD a set's files all went to target.table (the input now refuses that); such runs replay so.
  const setLoad = isTableSet(input) && patched(TABLE_SET_LOAD);
  const target = input.target;
  const load = setLoad
    ? (loader: Loader) =>
        loader.loadTargetSet({
          target: { name, mode, ...(target.schema !== undefined ? { schema: target.schema } : { tables: target.tables }) },
          files: manifest.files.map(({ table, path, rows, sha256 }) => ({ table: table!, path, rows, sha256 })),
          format,
          operationId,
          // The package names each table's columns in file order and their types: each field loads into the target
          // column of its name, a binary one only into a column of its type (loads scheduled by an earlier release: by position).
          ...(manifest.dataPackage ? { dataPackage: { path: manifest.dataPackage.path, sha256: manifest.dataPackage.sha256 } } : {}),
        })
    : (loader: Loader) =>
        loader.loadTarget({
          // The input's check gives every one-table run with a target its target.table.
          target: { name, table: target.table!, mode },
          files: manifest.files.map(({ path, rows, sha256 }) => ({ path, rows, sha256 })),
          format,
          operationId,
          ...(manifest.columns ? { columns: manifest.columns.map((c) => c.name) } : {}),
          ...(manifest.columns && input.format === 'binary' ? { columnTypes: manifest.columns.map((c) => c.pgType) } : {}),
        });
  return { manifest, attempts, report: await runLoad(input, operationId, load, (report) => report) };
}

async function extractWithFreshSnapshots(
  input: ExtractionInput,
  attemptFolder: (attempt: number) => string,
  { status, show, discarded: told }: Progress,
): Promise<{ manifest: Manifest; attempts: AttemptRecord[] }> {
  const attempts: AttemptRecord[] = [];
  for (let attempt = 1; ; attempt++) {
    const scope: AttemptScope = { attempt, folder: attemptFolder(attempt) };
    // What a failed attempt discards: every name it told of, and every file under a batched prefix.
    let planned: string[] = [];
    let prefixes: string[] = [];
    const events: AttemptEvents = {
      planned: (plan) => {
        planned = [...plan.names];
        prefixes = [...(plan.prefixes ?? [])];
        status.partitionsTotal = plan.partitions;
        if (plan.tables !== undefined) Object.assign(status, { tablesDone: 0, tablesTotal: plan.tables });
        show();
      },
      writes: (name) => {
        planned = [...planned, name];
      },
      done: (partitions, files, tablesDone) => {
        status.partitionsDone += partitions;
        for (const file of files) {
          status.rows += file.rows;
          status.bytes += file.bytes;
        }
        if (tablesDone !== undefined) status.tablesDone = tablesDone;
        show();
      },
      copying: (batchWorkflowId) => {
        status.batchWorkflowId = batchWorkflowId;
      },
    };
    Object.assign(status, { attempt, partitionsDone: 0, partitionsTotal: 0, rows: 0, bytes: 0 });
    try {
      const files =
        isTableSet(input) && patched(TABLE_SET)
          ? await tableSetAttempt(input, scope, events)
          : input.partitions === 1
            ? await wholeCopyAttempt(input, scope, events)
            : await partitionedAttempt(input, scope, events);
      const manifest = await withDataPackage(input, scope, files, events);
      if (patched(PAYLOAD_BUDGET)) requireManifestFits(manifest);
      attempts.push({ attempt, result: 'completed', reason: null, releasedFiles: 0, cleanupErrorCode: null });
      return { manifest, attempts };
    } catch (err) {
      if (status.batchWorkflowId) status.batchWorkflowId = null;
      const discarded = await discardAttempt(scope, planned, prefixes);
      const lost = isSnapshotLost(err);
      attempts.push({ attempt, result: lost ? 'snapshot_lost' : 'failed', reason: describeFailure(err), ...discarded });
      told(attempts.at(-1)!);
      log.warn('extraction attempt failed', { attempt, reason: describeFailure(err), cleanupErrorCode: discarded.cleanupErrorCode });
      if (!lost || isCancellation(err)) throw err;
      if (attempt >= input.maxSnapshotAttempts) {
        throw ApplicationFailure.create({
          type: ErrorCode.ATTEMPTS_EXHAUSTED,
          message: `the snapshot was lost ${attempt === 1 ? 'once' : `${attempt} times`} (the last time, ${rootFailure(err) ?? describeFailure(err)})`,
          nonRetryable: true,
          details: [attempts],
        });
      }
    }
  }
}

/**
 * Discards again the folders failed discards left, for a run that ends without a terminal step
 * (which would). Never throws: a release that failed is every folder failing with its code.
 */
export async function discardLeftFolders(folders: string[]): Promise<ReleaseReport> {
  try {
    return await CancellationScope.nonCancellable(() => cleanup.releaseOutputs({ ...folderOwner(), paths: [], sweepFolders: [], discardFolders: folders }));
  } catch (err) {
    return { deleted: [], failures: folders.map((path) => ({ path, code: describeFailure(err) })) };
  }
}

/**
 * Nothing of a failed attempt survives: its files would mix two snapshots. A cleanup failure is
 * recorded on the attempt, never thrown over the attempt's own failure or its fresh retry.
 */
async function discardAttempt(scope: AttemptScope, planned: string[], prefixes: string[]): Promise<Pick<AttemptRecord, 'releasedFiles' | 'cleanupErrorCode'>> {
  try {
    const report = await CancellationScope.nonCancellable(() =>
      cleanup.releaseOutputs({
        ...folderOwner(),
        // A batch file goes with its prefix: naming it too would count it twice, and a run of many batches would outgrow the request.
        paths: planned.filter((name) => !prefixes.some((prefix) => name.startsWith(prefix))),
        sweepFolders: [],
        discardFolders: [scope.folder],
        ...(prefixes.length ? { prefixes } : {}),
      }),
    );
    return { releasedFiles: report.deleted.length, cleanupErrorCode: report.failures[0]?.code ?? null };
  } catch (cleanupErr) {
    // Runs whose discard failed before this was recorded ended with the cleanup's failure; they replay so.
    if (!patched(DISCARD_FAILURE_RECORDED)) throw cleanupErr;
    return { releasedFiles: 0, cleanupErrorCode: describeFailure(cleanupErr) };
  }
}

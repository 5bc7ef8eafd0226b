/**
 * An attempt on a held snapshot: ask a worker for its holder queue, hold the snapshot there, wait
 * for its plan while the attempt's folder is prepared, copy (the caller's part), and complete the
 * receipt on the holder. Whenever the
 * hold ends before completion the attempt fails as the holder's failure (SNAPSHOT_LOST), and every
 * reader of the snapshot is stopped before the caller discards the attempt's files.
 */
import { CancellationScope, isCancellation, patched } from '@temporalio/workflow';
import type { ExtractionInput } from '../contract/extraction-input';
import type { DataPackageFile, Manifest, ManifestFile } from '../contract/extraction-types';
import type { SourceColumn } from '../contract/source-column';
import { runLabel } from '../contract/table-selection';
import { holderActivities, quickActivities } from './activity-stubs';
import type { AttemptScope } from './attempts';
import { asHolderFailure, endsHold, failsAgainAtCompletion, isRecoveryConflictFailure, isSnapshotLost } from './failure-kind';
import { requireFilesFit } from './payload-budget';
import {
  CALLERS_FAULT_AT_COMPLETION,
  FOLDER_BEFORE_DISCARD,
  PAYLOAD_BUDGET,
  PLAN_WAIT_WITH_HOLD,
  PREPARE_FOLDER_WHILE_PLANNING,
  QUEUE_FAILURE_AFTER_FOLDER,
  RECOVERY_CONFLICT_WHILE_PLANNING,
  RELEASE_HOLD_ON_FAILURE,
  RELEASE_HOLD_ON_GIVE_WAY,
} from './patches';
import { folderOwner, runKey } from './run-key';

export type HolderControl = ReturnType<typeof holderActivities>['control'];

/**
 * Completing the receipt checks that every file is visible (a HEAD per object on S3). A failure
 * there that is the caller's fault (access denied, a bucket gone, a receipt too large) fails the
 * run with its own code: a fresh snapshot would copy everything again and meet it again. Runs that
 * met one before this change took it for a lost snapshot, and replay so.
 */
function completionFailure(err: unknown): unknown {
  return failsAgainAtCompletion(err) && patched(CALLERS_FAULT_AT_COMPLETION) ? err : asHolderFailure(err, true);
}

/**
 * A standby's recovery conflict that ends the holder while it plans loses the snapshot (a fresh
 * attempt), as one after the plan does. Runs that met it before this change failed with it, and
 * replay so.
 */
function conflictLoses(err: unknown): boolean {
  return isRecoveryConflictFailure(err) && patched(RECOVERY_CONFLICT_WHILE_PLANNING);
}

/** The copy under way: its files, and a promise that settles once every reader has stopped. */
export interface Copying {
  /** How many planned ranges the copy reads (each to its end before `files` resolves). */
  ranges: number;
  files: Promise<ManifestFile[]>;
  settled: Promise<unknown>;
  /** A data package that reads the snapshot (a set's): the receipt completes after it, while the hold lasts. */
  packageInHold?: Promise<DataPackageFile | null>;
  /** A data package that reads nothing of the snapshot (one table's): the receipt completes while it is written. */
  packageBesideReceipt?: Promise<DataPackageFile | null>;
}

/** What the manifest takes from a plan: one table's has its columns and primary key, a set's has neither. */
interface HeldPlan {
  coordinatorPid: number | null;
  snapshotDigest: string | null;
  columns?: SourceColumn[] | undefined;
  primaryKey?: string[] | undefined;
}

export function totals(files: readonly ManifestFile[]): { rows: number; bytes: number } {
  return files.reduce((t, f) => ({ rows: t.rows + f.rows, bytes: t.bytes + f.bytes }), { rows: 0, bytes: 0 });
}

export async function onHeldSnapshot<P extends HeldPlan>(
  input: ExtractionInput,
  scope: AttemptScope,
  awaitPlan: (control: HolderControl, attemptKey: string) => Promise<P>,
  copy: (plan: P, copyScope: CancellationScope, attemptKey: string) => Promise<Copying>,
): Promise<Manifest> {
  const { workflowId, runId } = runKey();
  const attemptKey = `${workflowId}/${runId}/attempt-${scope.attempt}`;
  // The attempt's folder is prepared while the holder exports and plans: two round trips fewer
  // before the first copy. Runs started before prepare it after the plan, and replay so.
  const quick = quickActivities(input);
  const prepareFolder = () => quick.prepareOutputFolder(scope.folder, folderOwner().runId);
  // A plan that fails (or a run cancelled while planning) may beat the prepare: the caller's discard
  // must find the folder made, or a marker lands after the discard in a folder nothing removes. So
  // the prepare is not cancelled, and a failure waits for it. Runs started before replay without.
  const whilePlanning = patched(PREPARE_FOLDER_WHILE_PLANNING);
  const folderBeforeDiscard = whilePlanning && patched(FOLDER_BEFORE_DISCARD);
  const folderReady = !whilePlanning ? null : folderBeforeDiscard ? CancellationScope.nonCancellable(prepareFolder) : prepareFolder();
  folderReady?.catch(() => undefined);
  const queue = await quick.holderTaskQueue().catch(async (err: unknown) => {
    // Before the try below, whose failure path waits for the prepare: a cancellation here (or a next attempt
    // started in a cancelled run, whose prepare is not cancelled) must not let the discard race it either.
    // Runs that failed here before this change replay without the wait.
    if (folderBeforeDiscard && patched(QUEUE_FAILURE_AFTER_FOLDER)) await folderReady!.catch(() => undefined);
    throw err;
  });
  const holder = holderActivities(queue, input);
  const holdScope = new CancellationScope();
  const held = holdScope.run(() => holder.hold.holdSnapshot({ attemptKey, input }));
  // Rejects whenever the hold ends, normally or not; only consulted until completion.
  let planReceived = false;
  let holdOver = false;
  const holdEnded = held.then(
    () => {
      holdOver = true;
      throw asHolderFailure(new Error('the snapshot holder ended before completion'), true);
    },
    (err: unknown) => {
      // A cancelled hold (TRY_CANCEL) rejects at once, while the activity runs on until it learns of it.
      holdOver = !isCancellation(err);
      // After the plan any end loses the snapshot: no patch marker to record then.
      throw asHolderFailure(err, planReceived, !planReceived && conflictLoses(err));
    },
  );
  holdEnded.catch(() => undefined);
  const copyScope = new CancellationScope();
  let settled: Promise<unknown> = Promise.resolve();
  try {
    // The wait for the plan ends with the hold: a hold that failed before the wait began (a source
    // not configured, say) left it waiting for a plan no one would publish until the run closed.
    // Runs started before waited in the run's own scope, and replay so.
    const planWait = () => awaitPlan(holder.control, attemptKey);
    const plan = await Promise.race([
      (patched(PLAN_WAIT_WITH_HOLD) ? holdScope.run(planWait) : planWait()).catch((err) => Promise.reject(asHolderFailure(err, false, conflictLoses(err)))),
      holdEnded,
    ]);
    planReceived = true;
    await (folderReady ?? quick.prepareOutputFolder(scope.folder, folderOwner().runId));
    const copying = await copy(plan, copyScope, attemptKey);
    settled = copying.settled;
    const files = await Promise.race([copying.files, holdEnded]);
    const evidence = files.map((f) => ({ name: f.name, rows: f.rows, bytes: f.bytes, sha256: f.sha256 }));
    if (patched(PAYLOAD_BUDGET)) requireFilesFit(files, evidence);
    const inHold = await Promise.race([copying.packageInHold ?? Promise.resolve(null), holdEnded]);
    // The package beside the receipt needs no hold, which ends once the receipt completes: it is not raced with the hold.
    const [beside, receipt] = await Promise.all([
      copying.packageBesideReceipt ?? Promise.resolve(null),
      holder.control
        .completeSnapshot({
          attemptKey,
          evidence,
          rangesRead: copying.ranges,
        })
        .catch((err) => Promise.reject(completionFailure(err))),
    ]);
    const dataPackage = inHold ?? beside;
    await held.catch(() => undefined);
    return {
      workflowId,
      table: runLabel(input),
      attempt: scope.attempt,
      strategy: 'partitioned_copy',
      coordinatorPid: plan.coordinatorPid,
      snapshotDigest: plan.snapshotDigest,
      files,
      totals: totals(files),
      columns: plan.columns ?? null,
      primaryKey: plan.primaryKey ?? null,
      dataPackage,
      extractionReceipt: receipt,
    };
  } catch (err) {
    // Stop every reader of this snapshot before anyone discards its files.
    await CancellationScope.nonCancellable(async () => {
      copyScope.cancel();
      // The hold learns of its cancellation only with its next heartbeat (up to 0.8 × holderHeartbeatMs
      // later), holding the snapshot's transaction and table locks until then: a holder still there
      // is asked to end now. A lost snapshot most often means the holder is gone (the ask would wait
      // for its queue), but a copy that gave way to a migration lost it while the holder holds the
      // very locks the migration waits for. Runs started before replay without either.
      const holderThere = !holdOver && (!isSnapshotLost(err) || (endsHold(err) && patched(RELEASE_HOLD_ON_GIVE_WAY)));
      const release = holderThere && patched(RELEASE_HOLD_ON_FAILURE) ? holder.release.releaseSnapshot(attemptKey).catch(() => undefined) : null;
      holdScope.cancel();
      const folderSettled = folderBeforeDiscard ? folderReady!.catch(() => undefined) : null;
      await Promise.all([settled, release, folderSettled]);
    });
    throw err;
  }
}

/**
 * Classifies activity failures inside the workflow: a lost snapshot (retry with a fresh one),
 * a cancellation, or anything else (fail the run). Pure and deterministic.
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, isCancellation } from '@temporalio/workflow';
import { ErrorCode, causes } from '../errors';

/** The ApplicationFailure type in the cause chain, if any. */
function failureType(err: unknown): string | undefined {
  for (const e of causes(err)) if (e instanceof ApplicationFailure && e.type) return e.type;
  return undefined;
}

/** The message of the ApplicationFailure in the cause chain (what the activity's error said), if any. */
export function failureMessage(err: unknown): string | undefined {
  for (const e of causes(err)) if (e instanceof ApplicationFailure && e.message) return e.message;
  return undefined;
}

/** Whether the activity's failure asks that the attempt's hold end now (PgExtractErrorOptions.endsHold: a copy gave way). */
export function endsHold(err: unknown): boolean {
  for (const e of causes(err)) if (e instanceof ApplicationFailure) return (e.details?.[0] as { endsHold?: unknown } | undefined)?.endsHold === true;
  return false;
}

/** The timeout that ended an activity, if that is how it ended. */
export function activityTimeout(err: unknown): TimeoutFailure | undefined {
  if (!(err instanceof ActivityFailure)) return undefined;
  const [, cause] = causes(err);
  return cause instanceof TimeoutFailure ? cause : undefined;
}

/**
 * Whether a holder failure means the snapshot is gone. Once the plan was handed out, any end of
 * the holder (its worker died, its session was killed or timed out) loses the snapshot. Before
 * that, only a timeout does (the holding worker vanished), and a standby's recovery conflict when
 * `recoveryConflictLoses` (it ended that snapshot; a fresh one may not meet it); an error such as
 * an unknown table or an unreachable source is the run's own failure, and a fresh snapshot would
 * not help.
 */
function holderLostSnapshot(err: unknown, planReceived: boolean, recoveryConflictLoses = false): boolean {
  // Outputs the holder cannot see stay unseen under a fresh snapshot: the run's own failure.
  if (failureType(err) === ErrorCode.OUTPUT_NOT_VISIBLE) return false;
  if (planReceived || failureType(err) === ErrorCode.SNAPSHOT_LOST) return true;
  if (recoveryConflictLoses && isRecoveryConflictFailure(err)) return true;
  for (const e of causes(err)) if (e instanceof TimeoutFailure) return true;
  return false;
}

/** The innermost ApplicationFailure of `err` as `TYPE: message` (why a snapshot was lost, under the SNAPSHOT_LOST that says so), if any. */
export function rootFailure(err: unknown): string | undefined {
  let root: ApplicationFailure | undefined;
  for (const e of causes(err)) if (e instanceof ApplicationFailure) root = e;
  return root && `${root.type ?? ErrorCode.FAILED}: ${root.message}`;
}

/**
 * Codes with which completing a receipt fails again under a fresh snapshot: the storage refuses the
 * worker's credentials or has no such bucket, or the receipt is too large for a payload. (An
 * unreachable endpoint, just reached by every copy, may be passing: a fresh attempt is tried.)
 */
const FAILS_AGAIN_AT_COMPLETION: ReadonlySet<string> = new Set([
  ErrorCode.S3_ACCESS_DENIED,
  ErrorCode.S3_BUCKET_NOT_FOUND,
  ErrorCode.RUN_EXCEEDS_PAYLOAD_LIMIT,
]);

/** Whether completing a receipt failed with a code in {@link FAILS_AGAIN_AT_COMPLETION}. */
export function failsAgainAtCompletion(err: unknown): boolean {
  return FAILS_AGAIN_AT_COMPLETION.has(failureType(err) ?? '');
}

/** Whether an activity failed with SOURCE_RECOVERY_CONFLICT (a standby cancelled its read or ended its session). */
export function isRecoveryConflictFailure(err: unknown): boolean {
  return failureType(err) === ErrorCode.SOURCE_RECOVERY_CONFLICT;
}

export function isSnapshotLost(err: unknown): boolean {
  return failureType(err) === ErrorCode.SNAPSHOT_LOST;
}

/** The table's code for how an activity failed: CANCELLED, TIMEOUT_<type>, its failure type, else FAILED. */
export function describeFailure(err: unknown): string {
  if (isCancellation(err)) return ErrorCode.CANCELLED;
  const timeout = activityTimeout(err);
  if (timeout) return `TIMEOUT_${timeout.timeoutType}`;
  return failureType(err) ?? ErrorCode.FAILED;
}

/** Re-raises a holder failure as SNAPSHOT_LOST when it lost the snapshot, else unchanged. */
export function asHolderFailure(err: unknown, planReceived: boolean, recoveryConflictLoses = false): unknown {
  if (isCancellation(err) || !holderLostSnapshot(err, planReceived, recoveryConflictLoses)) return err;
  return ApplicationFailure.create({ type: ErrorCode.SNAPSHOT_LOST, message: 'the snapshot holder was lost', cause: err instanceof Error ? err : undefined });
}

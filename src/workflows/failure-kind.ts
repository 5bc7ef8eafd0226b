/**
 * Classifies activity failures inside the workflow: a lost snapshot (retry with a fresh one),
 * a cancellation, or anything else (fail the run). Pure and deterministic.
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, isCancellation } from '@temporalio/workflow';
import { ErrorCode } from '../errors';

/** The ApplicationFailure type in the cause chain, if any. */
export function failureType(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ApplicationFailure && e.type) return e.type;
  }
  return undefined;
}

/**
 * Holder activities fail as "snapshot lost" unless they failed on bad input: a timeout or a
 * crash of the holding worker means the exporting transaction is gone.
 */
export function holderFailureCode(err: unknown): string {
  const type = failureType(err);
  if (type && type !== ErrorCode.SNAPSHOT_LOST && err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable) {
    return type;
  }
  return ErrorCode.SNAPSHOT_LOST;
}

export function isSnapshotLost(err: unknown): boolean {
  return failureType(err) === ErrorCode.SNAPSHOT_LOST;
}

export function describeFailure(err: unknown): string {
  if (isCancellation(err)) return 'CANCELLED';
  if (err instanceof ActivityFailure && err.cause instanceof TimeoutFailure) return `TIMEOUT_${err.cause.timeoutType}`;
  return failureType(err) ?? 'FAILED';
}

/** Re-raises a holder failure as a SNAPSHOT_LOST ApplicationFailure (or its own input error). */
export function asHolderFailure(err: unknown): unknown {
  if (isCancellation(err)) return err;
  const code = holderFailureCode(err);
  return code === ErrorCode.SNAPSHOT_LOST
    ? ApplicationFailure.create({ type: code, message: 'the snapshot holder was lost', cause: err instanceof Error ? err : undefined })
    : err;
}

/**
 * Turns errors into Temporal failures with a stable type: our codes become the failure type
 * (non-retryable when the error table says retrying cannot help), and URLs in messages lose their passwords.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { ErrorCode, PgExtractError, codeInfo } from '../errors';
import { redactUrl } from '../config';

/** PostgreSQL errors by SQLSTATE (`SQLSTATE_40001`), system errors by errno (`ENOSPC`), else the class name. */
export function failureTypeOf(e: { name?: string; code?: unknown }): string {
  if (typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return `SQLSTATE_${e.code}`;
  if (typeof e?.code === 'string' && /^E[A-Z0-9_]+$/.test(e.code)) return e.code;
  return e?.name ?? 'Error';
}

export function toActivityFailure(err: unknown): Error {
  if (err instanceof ApplicationFailure || err instanceof CancelledFailure) return err;
  if (err instanceof PgExtractError) {
    const failure = ApplicationFailure.create({
      type: err.code,
      message: redactUrl(err.message),
      nonRetryable: !codeInfo(err.code).retryable,
      details: [{ field: err.field ?? null, notes: err.notes.map(redactUrl) }],
    });
    return failure;
  }
  const e = err as { name?: string; message?: string; code?: unknown };
  return ApplicationFailure.create({
    type: isRecoveryConflict(e) ? ErrorCode.SOURCE_RECOVERY_CONFLICT : failureTypeOf(e),
    message: redactUrl(String(e?.message ?? err)),
  });
}

/**
 * A hot standby's recovery conflict ("canceling statement due to conflict with recovery",
 * "terminating connection due to conflict with recovery"): PostgreSQL gives it the SQLSTATE of a
 * serialization failure (of a deadlock, for a buffer pin), so only the message (in English, the
 * server's default) tells it apart.
 */
function isRecoveryConflict(e: { code?: unknown; message?: string }): boolean {
  return (e?.code === '40001' || e?.code === '40P01') && /conflict with recovery/.test(String(e.message));
}

/**
 * Runs `work`, converting any error with {@link toActivityFailure}. Once the activity is
 * cancelled, whatever the cancellation caused (an aborted COPY, a closed session) is reported as
 * the cancellation itself, so the server records it cancelled and never retries it.
 */
export async function withFailures<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const { cancellationSignal } = Context.current();
    if (cancellationSignal.aborted) {
      const reason: unknown = cancellationSignal.reason;
      throw reason instanceof CancelledFailure ? reason : new CancelledFailure(ErrorCode.CANCELLED);
    }
    throw toActivityFailure(err);
  }
}

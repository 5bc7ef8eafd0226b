/**
 * Turns errors into Temporal failures with a stable type: our codes become the failure type
 * (non-retryable when the error table says retrying cannot help), and URLs in messages lose their passwords.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { ErrorCode, PgExtractError, codeInfo } from '../errors';
import { redactUrl } from '../redact';
import { PAYLOAD_BUDGET_BYTES, jsonBytes } from '../contract/payload-limit';
import { formatTableName } from '../contract/identifiers';
import { quoteQualified } from '../postgres/sql';

/** The planned range a copy was reading: its table and partition. */
export interface RangeRead {
  table: { schema: string; table: string };
  partition: number;
}

/**
 * `message` naming the range it is about, unless it names the table already: in a run of many
 * tables the code and words alone (`column d (date) holds ±infinity`, `division by zero`) do not say
 * which table to look at, in the CLI, Web UI or the worker's log. Ours name a table as a user types
 * it (`public.t`) or, where the name is the one given to the server, quoted (a lock timeout's
 * `"public"."t"`): either is the table named.
 */
function aboutRange(message: string, range: RangeRead | null | undefined): string {
  if (!range) return message;
  const table = formatTableName(range.table);
  return message.includes(table) || message.includes(quoteQualified(range.table.schema, range.table.table))
    ? message
    : `${table} (partition ${range.partition}): ${message}`;
}

/** PostgreSQL errors by SQLSTATE (`SQLSTATE_40001`), system errors by errno (`ENOSPC`), else the class name. */
export function failureTypeOf(e: { name?: string; code?: unknown }): string {
  if (typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return `SQLSTATE_${e.code}`;
  if (typeof e?.code === 'string' && /^E[A-Z0-9_]+$/.test(e.code)) return e.code;
  return e?.name ?? 'Error';
}

/** `reading`: the range a copy was reading when it failed, named in the failure's message. */
export function toActivityFailure(err: unknown, reading?: RangeRead | null): Error {
  if (err instanceof ApplicationFailure || err instanceof CancelledFailure) return err;
  if (err instanceof PgExtractError) {
    const failure = ApplicationFailure.create({
      type: err.code,
      message: aboutRange(redactUrl(err.message), reading),
      nonRetryable: !codeInfo(err.code).retryable,
      details: [{ field: err.field ?? null, notes: err.notes.map(redactUrl), ...(err.endsHold ? { endsHold: true } : {}) }],
    });
    return failure;
  }
  const e = err as { name?: string; message?: string; code?: unknown };
  return ApplicationFailure.create({
    type: isRecoveryConflict(e) ? ErrorCode.SOURCE_RECOVERY_CONFLICT : failureTypeOf(e),
    message: aboutRange(redactUrl(String(e?.message ?? err)), reading),
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

/** `result`, unless it would not fit in the payload that returns it (the SDK would fail it on every try). */
function requireFits<T>(result: T): T {
  const bytes = jsonBytes(result);
  if (bytes <= PAYLOAD_BUDGET_BYTES) return result;
  throw new PgExtractError(
    ErrorCode.RUN_EXCEEDS_PAYLOAD_LIMIT,
    `this step's result takes ${bytes} bytes, more than one Temporal payload carries (${PAYLOAD_BUDGET_BYTES}): the run has too many files`,
  );
}

/**
 * Runs `work`, converting any error with {@link toActivityFailure}, and refusing a result too
 * large to return (RUN_EXCEEDS_PAYLOAD_LIMIT, not retried). Once the activity is
 * cancelled, whatever the cancellation caused (an aborted COPY, a closed session) is reported as
 * the cancellation itself, so the server records it cancelled and never retries it.
 */
export async function withFailures<T>(work: () => Promise<T>): Promise<T> {
  return withRangeFailures(() => work());
}

/**
 * {@link withFailures} for a copy of planned ranges: `work` tells `reading` the range it reads now
 * (null between ranges), and a failure names the one it was reading.
 */
export async function withRangeFailures<T>(work: (reading: (range: RangeRead | null) => void) => Promise<T>): Promise<T> {
  let range: RangeRead | null = null;
  try {
    return requireFits(await work((r) => (range = r)));
  } catch (err) {
    const { cancellationSignal } = Context.current();
    if (cancellationSignal.aborted) {
      const reason: unknown = cancellationSignal.reason;
      throw reason instanceof CancelledFailure ? reason : new CancelledFailure(ErrorCode.CANCELLED);
    }
    throw toActivityFailure(err, range);
  }
}

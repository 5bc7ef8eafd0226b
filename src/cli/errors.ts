/** Prints an error as `error CODE: message` plus a hint, and returns the exit code (2 for bad input). */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { redactUrl } from '../config';
import { ErrorCode, NON_RETRYABLE_CODES, PgExtractError } from '../errors';

const HINTS: Partial<Record<string, string>> = {
  [ErrorCode.SOURCE_UNKNOWN]: 'set PG_EXTRACT_SOURCE_URL (or PG_EXTRACT_SOURCE_<NAME>_URL) where the worker runs',
  [ErrorCode.TABLE_NOT_FOUND]: 'check the name with \\dt in psql; unquoted names fold to lower case',
  [ErrorCode.IDENTIFIER_INVALID]: 'use schema.table; quote names with special characters as "Name"',
  [ErrorCode.OUTPUT_PATH_ESCAPES_ROOT]: 'pick a folder inside PG_EXTRACT_OUT_DIR',
  [ErrorCode.ATTEMPTS_EXHAUSTED]: 'the snapshot holder kept dying: check worker health and idle timeouts',
};

function codeAndMessage(err: unknown): { code: string; message: string } {
  if (err instanceof PgExtractError) return { code: err.code, message: err.message };
  if (err instanceof WorkflowFailedError) {
    let cause: unknown = err.cause;
    while (cause && !(cause instanceof ApplicationFailure) && (cause as Error).cause) cause = (cause as Error).cause;
    if (cause instanceof ApplicationFailure) return { code: cause.type ?? 'WORKFLOW_FAILED', message: cause.message };
    return { code: 'WORKFLOW_FAILED', message: err.message };
  }
  const e = err as { code?: string; message?: string };
  if (e?.code === 'ECONNREFUSED' || /connect|UNAVAILABLE|transport/i.test(String(e?.message))) {
    return { code: 'TEMPORAL_UNREACHABLE', message: `${e?.message ?? err} (is the Temporal server at TEMPORAL_ADDRESS running?)` };
  }
  return { code: 'ERROR', message: String(e?.message ?? err) };
}

export function printError(err: unknown): number {
  const { code, message } = codeAndMessage(err);
  console.error(`error ${code}: ${redactUrl(message)}`);
  const hint = HINTS[code];
  if (hint) console.error(`hint: ${hint}`);
  return (NON_RETRYABLE_CODES as readonly string[]).includes(code) || code === ErrorCode.INPUT_INVALID ? 2 : 1;
}

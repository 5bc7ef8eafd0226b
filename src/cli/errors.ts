/** Prints an error as `error CODE: message` plus a hint, and returns the exit code; both come from the error table. */
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { CommanderError } from 'commander';
import { redactUrl } from '../redact';
import { ErrorCode, PgExtractError, codeInfo } from '../errors';
import { failureSummary } from '../failure-summary';

function codeAndMessage(err: unknown): { code: string; message: string } {
  if (err instanceof PgExtractError) return { code: err.code, message: err.message };
  // An argument commander refused (a bad value, an unknown or missing option), a workflow id that names no run or one already taken.
  if (err instanceof CommanderError) return { code: ErrorCode.INPUT_INVALID, message: `${err.message.replace(/^error: /, '')}; see pg-extract --help` };
  if (err instanceof WorkflowNotFoundError) return { code: ErrorCode.INPUT_INVALID, message: err.message };
  if (err instanceof WorkflowExecutionAlreadyStartedError) return { code: ErrorCode.INPUT_INVALID, message: `${err.message}: give another --workflow-id` };
  // A failed run, or a report the run refused (NOT_AWAITING_COMMIT, INPUT_INVALID): the code is its failure's type, or
  // the timeout that ended it (a step out of attempts), which carries no type of its own.
  if (err instanceof WorkflowFailedError || err instanceof WorkflowUpdateFailedError) {
    return failureSummary(err);
  }
  const e = err as { code?: string; message?: string };
  if (e?.code === 'ECONNREFUSED' || /connect|UNAVAILABLE|transport/i.test(String(e?.message))) {
    return { code: ErrorCode.TEMPORAL_UNREACHABLE, message: `${e?.message ?? err} (is the Temporal server at TEMPORAL_ADDRESS running?)` };
  }
  return { code: ErrorCode.ERROR, message: String(e?.message ?? err) };
}

export function printError(err: unknown): number {
  // Help (asked for, or shown for a missing command) ends through the same path, already printed.
  if (err instanceof CommanderError && (err.exitCode === 0 || err.code === 'commander.help')) return err.exitCode;
  const { code, message } = codeAndMessage(err);
  return printFailure(code, message);
}

/** Prints a failure reported by code (ours, or SQLSTATE_xxxxx) as {@link printError} does; returns its exit code. */
export function printFailure(code: string, message: string): number {
  const { hint, exit } = codeInfo(code);
  console.error(`error ${code}: ${redactUrl(message)}`);
  if (hint) console.error(`hint: ${hint}`);
  return exit;
}

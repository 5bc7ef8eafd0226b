/** The CLI's exit code and hint come from the error table: the caller's fault exits 2, anything else 1. */
import assert from 'node:assert/strict';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure } from '@temporalio/common';
import { printError } from '../../src/cli/errors';
import { ErrorCode, PgExtractError } from '../../src/errors';

/** printError's exit code and what it printed. */
function printed(err: unknown): { exit: number; lines: string[] } {
  const lines: string[] = [];
  const original = console.error;
  console.error = (line: string) => lines.push(line);
  try {
    return { exit: printError(err), lines };
  } finally {
    console.error = original;
  }
}

describe('CLI errors', () => {
  it('a lost snapshot exits 1: it is not bad input, though retrying the same step cannot help', () => {
    const failed = new WorkflowFailedError(
      'run failed',
      ApplicationFailure.nonRetryable('the snapshot holder was lost', ErrorCode.SNAPSHOT_LOST),
      'NON_RETRYABLE_FAILURE',
    );
    const { exit, lines } = printed(failed);
    assert.deepEqual(lines, ['error SNAPSHOT_LOST: the snapshot holder was lost']);
    assert.equal(exit, 1);
    assert.equal(printed(new PgExtractError(ErrorCode.SNAPSHOT_LOST, 'gone')).exit, 1);
  });

  it("the caller's fault exits 2 with the table's hint", () => {
    const { exit, lines } = printed(new PgExtractError(ErrorCode.TABLE_NOT_FOUND, 'no table public.nope'));
    assert.equal(exit, 2);
    assert.deepEqual(lines, ['error TABLE_NOT_FOUND: no table public.nope', 'hint: check the name with \\dt in psql; unquoted names fold to lower case']);
  });

  it('a report the run refused keeps its code (pg-extract commit while the run still copies exits 2)', () => {
    const refused = new WorkflowUpdateFailedError(
      'Workflow Update failed',
      ApplicationFailure.nonRetryable('extraction is still extracting', ErrorCode.NOT_AWAITING_COMMIT),
    );
    const { exit, lines } = printed(refused);
    assert.equal(lines[0], 'error NOT_AWAITING_COMMIT: extraction is still extracting');
    assert.equal(exit, 2);
  });

  it("a run ended by a timeout (a step out of attempts) says which step and which timeout, not WORKFLOW_FAILED with the wrapper's words", () => {
    const timedOut = new ActivityFailure(
      'Activity task timed out',
      'copyPartition',
      '7',
      RetryState.MAXIMUM_ATTEMPTS_REACHED,
      'worker-1',
      new TimeoutFailure('activity Heartbeat timeout', null, 'HEARTBEAT'),
    );
    const { exit, lines } = printed(new WorkflowFailedError('Workflow execution failed', timedOut, 'MAXIMUM_ATTEMPTS_REACHED'));
    assert.deepEqual(lines, ['error TIMEOUT_HEARTBEAT: activity copyPartition timed out (HEARTBEAT)']);
    assert.equal(exit, 1);
  });
});

/** `pg-extract status` of a closed run: why it failed, and no made-up counts when no worker answers its status query. */
import assert from 'node:assert/strict';
import { type Client, WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, RetryState, TypedSearchAttributes } from '@temporalio/common';
import { extractionStatus } from '../../src/client';
import { SearchAttributes, statusQuery } from '../../src/contract/definitions';
import type { ExtractionStatus } from '../../src/contract/extraction-types';
import { printStatus } from '../../src/cli/output';

/** A client whose one run has closed as `status`, with these search attributes, result and status query answer. */
function closedRun(status: string, attributes: TypedSearchAttributes, result: Promise<unknown>, query: () => Promise<ExtractionStatus>): Client {
  result.catch(() => undefined);
  const handle = {
    describe: async () => ({ status: { name: status }, typedSearchAttributes: attributes }),
    result: () => result,
    query: async (q: unknown) => {
      assert.equal(q, statusQuery);
      return query();
    },
  };
  return { workflow: { getHandle: () => handle } } as unknown as Client;
}

/** What printStatus wrote. */
function printed(workflowId: string, status: Awaited<ReturnType<typeof extractionStatus>>): string[] {
  const lines: string[] = [];
  const original = console.log;
  console.log = (line: string) => lines.push(line);
  try {
    printStatus(workflowId, status);
  } finally {
    console.log = original;
  }
  return lines;
}

describe('pg-extract status of a closed run', () => {
  const noWorker = async (): Promise<ExtractionStatus> => {
    throw new Error('Failed to query Workflow: no poller seen');
  };

  it('a run that no worker answers for shows what its search attributes hold (table, phase, rows, outcome), and counts it cannot know as unknown, not 0', async () => {
    const attributes = new TypedSearchAttributes([
      { key: SearchAttributes.table, value: 'public.big' },
      { key: SearchAttributes.phase, value: 'done' },
      { key: SearchAttributes.rows, value: 2_000_000 },
      { key: SearchAttributes.outcome, value: 'success' },
    ]);
    const status = await extractionStatus(closedRun('COMPLETED', attributes, Promise.resolve({}), noWorker), 'big');
    assert.deepEqual(status, {
      phase: 'done',
      table: 'public.big',
      attempt: null,
      partitionsDone: null,
      partitionsTotal: null,
      rows: 2_000_000,
      bytes: null,
      outcome: 'success',
      workflowStatus: 'COMPLETED',
      failure: null,
    });
    const lines = printed('big', status);
    assert.ok(lines.includes('rows        2000000') && lines.includes('outcome     success'), lines.join('\n'));
    assert.ok(lines.includes('partitions  ? (no worker answered)'), lines.join('\n'));
  });

  it('a failed run says why: the code and words inside its failure, as the CLI prints them when it fails', async () => {
    const attributes = new TypedSearchAttributes([
      { key: SearchAttributes.table, value: 'public.nope' },
      { key: SearchAttributes.phase, value: 'extracting' },
    ]);
    const failed = new WorkflowFailedError(
      'Workflow execution failed',
      new ActivityFailure(
        'Activity task failed',
        'holdSnapshot',
        '3',
        RetryState.NON_RETRYABLE_FAILURE,
        'worker-1',
        ApplicationFailure.nonRetryable('table public.nope does not exist or is not readable', 'TABLE_NOT_FOUND'),
      ),
      'NON_RETRYABLE_FAILURE',
    );
    const answered: ExtractionStatus = {
      phase: 'extracting',
      table: 'public.nope',
      attempt: 1,
      partitionsDone: 0,
      partitionsTotal: 0,
      rows: 0,
      bytes: 0,
      outcome: null,
    };
    const status = await extractionStatus(
      closedRun('FAILED', attributes, Promise.reject(failed), async () => answered),
      'nope',
    );
    assert.deepEqual(status.failure, { code: 'TABLE_NOT_FOUND', message: 'table public.nope does not exist or is not readable' });
    assert.equal(status.attempt, 1, 'the status query answered');
    assert.ok(printed('nope', status).includes('failure     TABLE_NOT_FOUND: table public.nope does not exist or is not readable'));
  });
});

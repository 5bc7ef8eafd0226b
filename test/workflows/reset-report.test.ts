/**
 * A run reset (Temporal Web UI, `temporal workflow reset`) is a new run id under the same workflow
 * id; the run id `start --json` printed names the run the reset replaced. A report naming that run
 * reaches the run that now stands for it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { reportCommit, startExtraction, waitForManifest } from '../../src/client';
import { WorkflowFailedError } from '@temporalio/client';
import { commitUpdate, statusQuery } from '../../src/contract/definitions';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { seedMixedTable, settleSessions } from '../support/database';
import { eventually } from '../support/eventually';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

describe('a report naming the run a reset replaced (live)', function () {
  this.timeout(120_000);
  let table = '';
  before(async () => (table = await seedMixedTable('resetrep', 2_000)));
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('reaches the reset run, which decides by it; a report naming a terminated run whose id started again does not reach the new run', async () => {
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await startExtraction(client, { table, partitions: 2 }, { taskQueue });
      await waitForManifest(handle);
      const firstRunId = handle.firstExecutionRunId;
      const lastTask = ((await handle.fetchHistory()).events ?? []).filter((e) => e.workflowTaskCompletedEventAttributes).at(-1)!;
      const { runId: resetRunId } = await live().temporal.client.workflowService.resetWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId: handle.workflowId, runId: firstRunId },
        reason: 'test: reset to the last workflow task',
        workflowTaskFinishEventId: lastTask.eventId,
        requestId: randomUUID(),
      });
      const reset = client.workflow.getHandle(handle.workflowId, resetRunId!);
      await eventually(async () => (await reset.query(statusQuery)).phase === 'awaiting_commit', 'the reset run awaits the commit again');
      const receipt = await reportCommit(client, handle.workflowId, { outcome: 'committed' }, firstRunId);
      assert.deepEqual([receipt.outcome, receipt.cleanupSucceeded], ['success', true]);
      const result = (await reset.result()) as ExtractionResult;
      assert.deepEqual(result.terminalReceipt, receipt, 'the reset run decided by the report');

      // A run terminated (not reset) and its workflow id started again: the new run is another chain's, not the ended run's.
      const ended = await startExtraction(client, { table, partitions: 1 }, { taskQueue });
      await waitForManifest(ended);
      await ended.terminate('test: an operator ends the run');
      const again = await startExtraction(client, { table, partitions: 1 }, { taskQueue, workflowId: ended.workflowId });
      await waitForManifest(again);
      await assert.rejects(reportCommit(client, ended.workflowId, { outcome: 'committed' }, ended.firstExecutionRunId), WorkflowFailedError);
      assert.equal((await again.query(statusQuery)).phase, 'awaiting_commit', 'the later run is not decided by a report naming the ended one');
      await again.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
    });
  });
});

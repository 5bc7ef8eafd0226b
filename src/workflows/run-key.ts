/** What a run names its things by, a reset notwithstanding (workflow code). */
import { workflowInfo } from '@temporalio/workflow';

/**
 * The run id this run names things by (its folders, snapshot holds, copy batches, load operations):
 * the one it started with. A reset gives a run a new run id and keeps this one, so a reset run
 * replays its child batches, finds its files and stays one load operation; a run never reset has
 * one id.
 */
export function runKey(): { workflowId: string; runId: string } {
  const { workflowId, originalExecutionRunId } = workflowInfo();
  return { workflowId, runId: originalExecutionRunId };
}

/** The folder activities' owner argument: only a reset run names one, its first run, which its folders' markers name. */
export function folderOwner(): { runId?: string } {
  const { runId, originalExecutionRunId } = workflowInfo();
  return runId === originalExecutionRunId ? {} : { runId: originalExecutionRunId };
}

/**
 * What a run's failure chain says to a person: its stable code and the words that explain it. A
 * run's failure arrives wrapped (WorkflowFailedError → ChildWorkflowFailure → ActivityFailure → …),
 * and only the inner failure says why.
 */
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure, TimeoutFailure } from '@temporalio/common';
import { ErrorCode, causes } from './errors';

export interface FailureSummary {
  code: string;
  message: string;
}

/**
 * The first ApplicationFailure's type and message (ours: the code of the error table); else, for a
 * chain that ends in a timeout (an activity or child that ran out of attempts on its heartbeat or
 * start-to-close timeout), `TIMEOUT_<type>` (the code attempts and load reasons record for it)
 * naming the step that timed out; else WORKFLOW_FAILED with `err`'s own message.
 */
export function failureSummary(err: unknown): FailureSummary {
  const chain = [...causes(err)];
  const failure = chain.find((e) => e instanceof ApplicationFailure);
  if (failure) return { code: failure.type ?? ErrorCode.WORKFLOW_FAILED, message: failure.message };
  const timeout = chain.find((e) => e instanceof TimeoutFailure);
  if (!timeout) return { code: ErrorCode.WORKFLOW_FAILED, message: (err as Error).message };
  // The step is the failure just outside the timeout: the activity, or the child workflow, that timed out.
  const step = chain[chain.indexOf(timeout) - 1];
  const what =
    step instanceof ActivityFailure
      ? `activity ${step.activityType}`
      : step instanceof ChildWorkflowFailure
        ? `child workflow ${step.workflowType} ${step.execution.workflowId}`
        : 'the run';
  return { code: `TIMEOUT_${timeout.timeoutType}`, message: `${what} timed out (${timeout.timeoutType})` };
}

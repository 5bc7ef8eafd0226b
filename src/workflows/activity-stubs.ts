/**
 * The activity stubs the attempts schedule: partition copies on any worker (the run's timeouts
 * and retry policy), the snapshot holder on one worker's own queue, and short bookkeeping.
 */
import { ActivityCancellationType, patched, proxyActivities } from '@temporalio/workflow';
import type { HolderActivities, MainActivities } from '../activities';
import type { ExtractionInput } from '../contract/extraction-input';
import { NON_RETRYABLE_CODES } from '../errors';
import { WAIT_FOR_CANCELLED_COPIES } from './patches';

/** The run's retry policy for activities that write its files: coded failures that cannot pass are not retried. */
function fileRetry(input: ExtractionInput) {
  return {
    maximumAttempts: input.partitionRetry.maximumAttempts,
    initialInterval: input.partitionRetry.initialIntervalMs,
    nonRetryableErrorTypes: [...NON_RETRYABLE_CODES],
  };
}

export function extractActivities(input: ExtractionInput) {
  return proxyActivities<MainActivities>({
    // A cancelled copy is waited for until it has stopped writing (it discards its temp file), so
    // the attempt's discard never races a rename that lands after it. Older runs replay without.
    cancellationType: patched(WAIT_FOR_CANCELLED_COPIES) ? ActivityCancellationType.WAIT_CANCELLATION_COMPLETED : ActivityCancellationType.TRY_CANCEL,
    startToCloseTimeout: input.timeouts.partitionStartToCloseMs,
    heartbeatTimeout: input.timeouts.partitionHeartbeatMs,
    retry: fileRetry(input),
  });
}

/**
 * Writing a set's data package (short, no heartbeat): a cancelled write is waited for until it has
 * ended, so an attempt's discard never races a package that lands after it.
 */
export function packageActivities(input: ExtractionInput) {
  return proxyActivities<MainActivities>({
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    startToCloseTimeout: '1 minute',
    retry: fileRetry(input),
  });
}

export function holderActivities(taskQueue: string, input: ExtractionInput) {
  const common = {
    taskQueue,
    // The queue dies with its worker: a task nobody picks up soon means the holder is gone.
    scheduleToStartTimeout: input.timeouts.holderHeartbeatMs * 2,
    heartbeatTimeout: input.timeouts.holderHeartbeatMs,
    // A retry cannot resume a snapshot: the workflow starts a fresh attempt instead.
    retry: { maximumAttempts: 1 },
  };
  return {
    hold: proxyActivities<HolderActivities>({
      ...common,
      // The hold lasts the whole attempt (a set's batches one after another, ranges queued behind busy workers),
      // not one partition's time: its heartbeats say when it is lost. Still bounded, so that no attempt holds
      // the source's oldest snapshot (and its vacuum horizon) past a month.
      startToCloseTimeout: '30 days',
      cancellationType: ActivityCancellationType.TRY_CANCEL,
    }),
    control: proxyActivities<HolderActivities>({ ...common, startToCloseTimeout: input.timeouts.partitionStartToCloseMs }),
    // Asked only while the hold is running, so its worker is polling: a queue nobody serves within
    // seconds means that worker is gone, and with it the read to release. It waits at most 10 s for
    // the read to close and sends no heartbeats.
    release: proxyActivities<HolderActivities>({
      taskQueue,
      scheduleToStartTimeout: '5 seconds',
      startToCloseTimeout: '30 seconds',
      retry: { maximumAttempts: 1 },
    }),
  };
}

/**
 * Short bookkeeping activities: output folders, the holder queue name. Retried as the run's file
 * writes are, but at least 3 times (a worker lost while it ran one costs an attempt, and a run
 * that allows its copies one attempt should not fail for that): a folder that cannot be made (a
 * permission, a full disk) fails the run once the attempts are spent, where it retried for ever.
 */
export function quickActivities(input: ExtractionInput) {
  const retry = fileRetry(input);
  return proxyActivities<MainActivities>({ startToCloseTimeout: '1 minute', retry: { ...retry, maximumAttempts: Math.max(3, retry.maximumAttempts) } });
}

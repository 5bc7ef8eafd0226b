/**
 * How the workflow runs the built-in loader. Since LOAD_ALWAYS_DECIDES the load activity
 * heartbeats (a dead loader worker is noticed within `timeouts.loadHeartbeatMs`), a cancelled run
 * waits for the load to report its transaction's end, and a load that ends without a report still
 * decides the run. Runs that reached the load under older code replay with the old proxy.
 */
import { ActivityCancellationType, CancellationScope, patched, proxyActivities } from '@temporalio/workflow';
import type { MainActivities } from '../activities';
import { LOAD_MESSAGE_LIMIT, type LoadReport } from '../contract/load-report';
import { ErrorCode, NON_RETRYABLE_CODES } from '../errors';
import type { ExtractionInput } from '../contract/extraction-input';
import { DEFAULT_LOAD_START_TO_CLOSE_MS } from '../contract/input-limits';
import { activityTimeout, describeFailure, failureMessage } from './failure-kind';
import { LOAD_ALWAYS_DECIDES, LOAD_FENCE_ASKED } from './patches';

// The fence makes a retried load a no-op once one attempt committed, so retrying is safe. Its list of
// non-retryable codes is the one runs under older code were scheduled with, kept as it was.
const legacyLoader = proxyActivities<MainActivities>({
  startToCloseTimeout: '12 hours',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: [ErrorCode.INPUT_INVALID, ErrorCode.SOURCE_UNKNOWN] },
});

function reportingLoader(input: ExtractionInput): typeof legacyLoader {
  return proxyActivities<MainActivities>({
    // An input from an older client has none (the parsed type says otherwise).
    startToCloseTimeout: input.timeouts.loadStartToCloseMs ?? DEFAULT_LOAD_START_TO_CLOSE_MS,
    heartbeatTimeout: input.timeouts.loadHeartbeatMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { maximumAttempts: 5, nonRetryableErrorTypes: [...NON_RETRYABLE_CODES] },
  });
}

/**
 * The report of a load that ended without one: cancelled (its transaction rolled back) or failed
 * (retries exhausted on errors raised before COMMIT) is `failed`; a load whose last attempt timed
 * out may have reached COMMIT, so it is `unknown`.
 */
function unreported(err: unknown, operationId: string): LoadReport {
  // Redacted where the activity made the failure; bounded as the activity bounds the messages it reports.
  const message = failureMessage(err)?.slice(0, LOAD_MESSAGE_LIMIT);
  return { outcome: activityTimeout(err) ? 'unknown' : 'failed', operationId, reason: describeFailure(err), rows: null, ...(message ? { message } : {}) };
}

// Asked after a load ended: short, and not retried for long (a fence it cannot read makes the run keep its files).
const fenceReader = proxyActivities<MainActivities>({ startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 3 } });

/**
 * The report of a load that ended without one and not by a timeout (cancelled, or out of retries),
 * from the target's fence: an attempt may have committed and vanished before reporting while the next
 * waited to retry, or committed as the cancellation came. Committed there is committed; no row is the
 * failure; a fence that cannot be read leaves the outcome `unknown`, and the run keeps its files.
 */
async function fenceDecides(input: ExtractionInput, operationId: string, report: LoadReport): Promise<LoadReport> {
  const asked = { target: input.target!.name, operationId };
  const verdict = await CancellationScope.nonCancellable(() => fenceReader.loadFenceVerdict(asked)).catch(() => 'unreadable' as const);
  if (verdict === 'committed') return { outcome: 'committed', operationId, reason: null, rows: null };
  if (verdict === 'not_committed') return report;
  const message = `the load ended without a report and its commit fence could not be read: an attempt may have committed${report.message ? ` (${report.message})` : ''}`;
  return { ...report, outcome: 'unknown', message: message.slice(0, LOAD_MESSAGE_LIMIT) };
}

/** The load activities as the workflow calls them. */
export type Loader = typeof legacyLoader;

/** Runs `call` on the loader; `onUnreported` turns a load that ended without a report into the call's result. */
export async function runLoad<R>(
  input: ExtractionInput,
  operationId: string,
  call: (loader: Loader) => Promise<R>,
  onUnreported: (report: LoadReport) => R,
): Promise<R> {
  if (!patched(LOAD_ALWAYS_DECIDES)) return call(legacyLoader);
  try {
    return await call(reportingLoader(input));
  } catch (err) {
    const report = unreported(err, operationId);
    if (report.outcome !== 'failed' || !patched(LOAD_FENCE_ASKED)) return onUnreported(report);
    return onUnreported(await fenceDecides(input, operationId, report));
  }
}

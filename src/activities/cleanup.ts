/**
 * Output folders and files: create an attempt's folder, and apply a terminal outcome or discard an
 * attempt. What releasing means on a local disk or in a bucket is the store's business
 * (src/storage/); here the request is parsed, the run named, and failures mapped.
 */
import { Context } from '@temporalio/activity';
import { ErrorCode, PgExtractError } from '../errors';
import type { ReleaseReport } from '../lifecycle/terminal';
import type { OutputStores } from '../storage/output-stores';
import { withFailures } from './failures';
import { heartbeating } from './heartbeats';
import { type ReleaseOutputsRequest, parseActivityRequest, releaseOutputsRequestSchema } from '../contract/activity-requests';

/** The run this activity works for, as its folders' markers name it. */
function runOwner(): string {
  const execution = Context.current().info.workflowExecution;
  if (!execution) throw new PgExtractError(ErrorCode.INPUT_INVALID, 'output folders belong to workflow runs; this activity has none');
  return JSON.stringify({ workflowId: execution.workflowId, runId: execution.runId });
}

export function createCleanupActivities({ stores }: { stores: OutputStores }) {
  return {
    async prepareOutputFolder(name: string): Promise<void> {
      return withFailures(() => heartbeating(() => stores.of(name).prepareFolder(name, runOwner())));
    },

    async releaseOutputs(raw: ReleaseOutputsRequest): Promise<ReleaseReport> {
      return withFailures(() => heartbeating(() => stores.release(parseActivityRequest(releaseOutputsRequestSchema, raw), runOwner())));
    },
  };
}

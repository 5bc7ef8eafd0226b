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
import { type ReleaseOutputsRequest, folderRunIdSchema, parseActivityRequest, releaseOutputsRequestSchema } from '../contract/activity-requests';
import { parseOrThrow } from '../contract/parse';

/**
 * The run this activity works for, as its folders' markers name it: its workflow's, under `runId`
 * (parsed by the caller) when the workflow gives one (a reset run names its folders by its first
 * run), else its own.
 */
function runOwner(runId?: string): string {
  const execution = Context.current().info.workflowExecution;
  if (!execution) throw new PgExtractError(ErrorCode.INPUT_INVALID, 'output folders belong to workflow runs; this activity has none');
  return JSON.stringify({ workflowId: execution.workflowId, runId: runId ?? execution.runId });
}

export function createCleanupActivities({ stores }: { stores: OutputStores }) {
  return {
    /** `runId`: the run the folder is for, when not this activity's own (see {@link runOwner}). */
    async prepareOutputFolder(name: string, runId?: string): Promise<void> {
      return withFailures(() => stores.of(name).prepareFolder(name, runOwner(parseOrThrow(folderRunIdSchema, runId, 'runId'))));
    },

    async releaseOutputs(raw: ReleaseOutputsRequest): Promise<ReleaseReport> {
      return withFailures(() =>
        heartbeating(async () => {
          const { runId, ...request } = parseActivityRequest(releaseOutputsRequestSchema, raw);
          return stores.release(request, runOwner(runId));
        }),
      );
    },
  };
}

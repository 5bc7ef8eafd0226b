/**
 * The activities of the main task queue (any worker) and of a worker's own holder queue.
 * Dependencies are injected, so tests and the worker wire real ones the same way.
 */
import { createBatchedExtractActivities } from './batched-extract';
import { createCleanupActivities } from './cleanup';
import { createDataPackageActivities } from './data-package';
import { type ExtractDeps, createExtractActivities } from './extract';
import { createLoadActivities } from './load';
import { type HolderDeps, createHolderActivities } from './snapshot-holder';
import { createTableGroupActivities } from './table-group';

export { SnapshotHolderRegistry } from './snapshot-holder';

export interface ActivityDeps extends ExtractDeps {
  /** This worker's own holder task queue, handed to workflows that need a snapshot held. */
  holderTaskQueue: string;
  /** Resolves a target name to its URL (PG_EXTRACT_TARGET_<NAME>_URL); only the worker sees it. */
  targetUrl: (name: string) => string;
}

/** Activities any worker on the main task queue runs. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createExtractActivities(deps),
    ...createBatchedExtractActivities(deps),
    ...createTableGroupActivities(deps),
    ...createCleanupActivities(deps),
    ...createDataPackageActivities(deps),
    ...createLoadActivities(deps),
    async holderTaskQueue(): Promise<string> {
      return deps.holderTaskQueue;
    },
  };
}

/** Activities only the holding worker runs, on its own task queue. */
export { createHolderActivities };
export type { HolderDeps };

export type MainActivities = ReturnType<typeof createActivities>;
export type HolderActivities = ReturnType<typeof createHolderActivities>;

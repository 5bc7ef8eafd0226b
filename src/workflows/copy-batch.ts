/**
 * copyBatchWorkflow: copies one batch of a table set's planned ranges inside the run's exported
 * snapshot, at most `maxInFlight` at a time, and returns the batch's files. The parent runs one
 * batch after another, so its own history grows by a few events per batch, not per partition,
 * and the run stays within Temporal's history limits however many tables it takes.
 */
import type { ExtractionInput } from '../contract/extraction-input';
import type { ManifestFile } from '../contract/extraction-types';
import { tableInput } from '../contract/table-selection';
import type { SplitKey } from '../contract/partition-range';
import type { PartitionRange } from '../contract/partition-range';
import type { SourceIdentity } from '../contract/partition-range';
import { extractActivities } from './activity-stubs';

/** One planned range of one table, and the file it goes to. */
export interface BatchItem {
  table: { schema: string; table: string; columns: string[] };
  key: SplitKey | null;
  range: PartitionRange;
  partition: number;
  name: string;
}

export interface CopyBatchInput {
  /** The run's input (its set of tables is not needed here and not passed). */
  input: ExtractionInput;
  snapshotId: string;
  snapshotDigest: string;
  source: SourceIdentity;
  items: BatchItem[];
}

/**
 * Runs `work` over `items` with at most `limit` in flight, in order; deterministic (no timers).
 * It rejects at the first failure, after every lane has stopped (none starts another item once
 * one failed), so a caller that sees the failure has no reader of the snapshot left running.
 */
export async function inFlight<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const lane = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        results[i] = await work(items[i]!);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const lanes = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, lane));
  const failure = lanes.find((l) => l.status === 'rejected');
  if (failure) throw failure.reason;
  return results;
}

export async function copyBatchWorkflow(batch: CopyBatchInput): Promise<ManifestFile[]> {
  const extract = extractActivities(batch.input);
  return inFlight(batch.items, batch.input.maxInFlight, async (item) => {
    const table = `${item.table.schema}.${item.table.table}`;
    const file = await extract.copyPartition({
      input: tableInput(batch.input, table),
      snapshotId: batch.snapshotId,
      snapshotDigest: batch.snapshotDigest,
      source: batch.source,
      ...item,
    });
    return { ...file, table };
  });
}

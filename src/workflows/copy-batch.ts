/**
 * copyBatchWorkflow: copies one batch of a table set's planned ranges inside the run's exported
 * snapshot, at most `maxInFlight` at a time, and returns the batch's files: a big table's range by
 * copyPartition, a group of small tables' ranges by one copyTables (one file per range all the same). The parent runs one
 * batch after another, so its own history grows by a few events per batch, not per partition,
 * and the run stays within Temporal's history limits however many tables it takes. What a batch
 * has copied so far is its `batchStatus` query and its Web UI details, which add no history.
 */
import { CancellationScope, patched, setHandler } from '@temporalio/workflow';
import { batchStatusQuery } from '../contract/definitions';
import type { ExtractionInput } from '../contract/extraction-input';
import type { BatchStatus, ManifestFile } from '../contract/extraction-types';
import { formatTableName } from '../contract/identifiers';
import { tableInput } from '../contract/table-selection';
import type { SplitKey } from '../contract/partition-range';
import type { PartitionRange } from '../contract/partition-range';
import type { SourceIdentity } from '../contract/partition-range';
import { extractActivities } from './activity-stubs';
import { grouped, humanBytes, showDetails } from './visibility';
import { BATCH_STOPS_ON_FAILURE, WAIT_FOR_CANCELLED_COPIES } from './patches';

/** One planned range of one table, and the file it goes to. */
export interface BatchItem {
  table: { schema: string; table: string; columns?: string[] };
  key: SplitKey | null;
  range: PartitionRange;
  partition: number;
  name: string;
}

/** Small tables' ranges copied by one activity on one session (see src/planning/table-groups.ts). */
export interface BatchGroup {
  group: BatchItem[];
}

export interface CopyBatchInput {
  /** The run's input (its set of tables is not needed here and not passed). */
  input: ExtractionInput;
  snapshotId: string;
  snapshotDigest: string;
  source: SourceIdentity;
  /** Groups only in batches of runs started on code with table groups. */
  items: (BatchItem | BatchGroup)[];
}

/**
 * Runs `work` over `items` with at most `limit` in flight, in order; deterministic (no timers).
 * It rejects at the first failure, after every lane has stopped (none starts another item once
 * one failed), so a caller that sees the failure has no reader of the snapshot left running.
 * `onFirstFailure` is told of the first failure at once, and may stop the items still running
 * (cancel their scope) and return true: the batch then rejects with that failure, not with the
 * cancellations it caused.
 */
async function inFlight<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>, onFirstFailure?: () => boolean): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let first: { error: unknown; stopped: boolean } | undefined;
  const lane = async (): Promise<void> => {
    while (!first && next < items.length) {
      const i = next++;
      try {
        results[i] = await work(items[i]!);
      } catch (error) {
        first ??= { error, stopped: onFirstFailure?.() ?? false };
        throw error;
      }
    }
  };
  const lanes = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (first?.stopped) throw first.error;
  const failure = lanes.find((l) => l.status === 'rejected');
  if (failure) throw failure.reason;
  return results;
}

/** The table as the manifest names it: catalog names joined by a dot. */
const tableName = (item: BatchItem) => `${item.table.schema}.${item.table.table}`;
/** The table as an activity's input names it: quoted where a name needs it, so it parses back to the same table. */
const inputName = (item: BatchItem) => formatTableName(item.table);

/** The batch's progress in Web UI, as its parent shows the run's. */
function showBatch(progress: BatchStatus): void {
  showDetails('**copy batch**', [
    ['partitions', `${progress.partitionsDone}/${progress.partitionsTotal}`],
    ['rows', grouped(progress.rows)],
    ['bytes', humanBytes(progress.bytes)],
  ]);
}

export async function copyBatchWorkflow(batch: CopyBatchInput): Promise<ManifestFile[]> {
  const extract = extractActivities(batch.input);
  const snapshot = { snapshotId: batch.snapshotId, snapshotDigest: batch.snapshotDigest, source: batch.source };
  const progress: BatchStatus = {
    partitionsDone: 0,
    partitionsTotal: batch.items.reduce((n, unit) => n + ('group' in unit ? unit.group.length : 1), 0),
    rows: 0,
    bytes: 0,
  };
  // Queries add nothing to history: the parent's history stays a few events per batch.
  setHandler(batchStatusQuery, () => progress);
  showBatch(progress);
  // A copy that fails for good stops the others at once, as a one-table run's does: the run's
  // failure or fresh attempt need not wait for them, nor the holder keep the snapshot meanwhile.
  // Runs started before let the others run to their end, and replay so.
  const lanes = new CancellationScope();
  const stopLanes = (): boolean => {
    // Only where a cancelled copy is waited for until it has stopped reading (the stub's own marker).
    if (!patched(WAIT_FOR_CANCELLED_COPIES) || !patched(BATCH_STOPS_ON_FAILURE)) return false;
    lanes.cancel();
    return true;
  };
  const copied = await lanes.run(() => inFlight(batch.items, batch.input.maxInFlight, copyUnit, stopLanes));
  return copied.flat();

  async function copyUnit(unit: BatchItem | BatchGroup): Promise<ManifestFile[]> {
    let files: ManifestFile[];
    if ('group' in unit) {
      const input = { ...batch.input, tables: [...new Set(unit.group.map(inputName))] };
      const copiedFiles = await extract.copyTables({ input, ...snapshot, ranges: unit.group });
      files = copiedFiles.map((file, i) => ({ ...file, table: tableName(unit.group[i]!) }));
    } else {
      files = [{ ...(await extract.copyPartition({ input: tableInput(batch.input, inputName(unit)), ...snapshot, ...unit })), table: tableName(unit) }];
    }
    progress.partitionsDone += files.length;
    for (const file of files) {
      progress.rows += file.rows;
      progress.bytes += file.bytes;
    }
    showBatch(progress);
    return files;
  }
}

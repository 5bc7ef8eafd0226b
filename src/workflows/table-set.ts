/**
 * One extraction attempt over a set of tables: the holder exports one snapshot, resolves, locks
 * and plans every table in it (biggest first); the workflow copies each planned range on any
 * worker, at most `maxInFlight` at a time over the whole run, and completes one receipt on the
 * holder. Losing the holder fails the attempt as SNAPSHOT_LOST, as for one table.
 */
import { CancellationScope, workflowInfo } from '@temporalio/workflow';
import { fileExtension } from '../postgres/export-format';
import type { ExtractionInput } from '../shared/extraction-input';
import type { ExtractionStatus, Manifest } from '../shared/extraction-types';
import { runLabel, tableInput } from '../shared/table-selection';
import { type AttemptScope, extractActivities, holderActivities, quick, totals } from './attempts';
import { asHolderFailure } from './failure-kind';

/** A file name part from a table name: safe on any file system and in any object key. */
function safePart(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 60);
}

/** `<folder>/<schema>.<table>.part-NNNN.csv`, names made safe and told apart by the table's place in the plan when they collide. */
function fileNamer(scope: AttemptScope, input: ExtractionInput, tables: { schema: string; table: string }[]): (table: number, partition: number) => string {
  const seen = new Set<string>();
  const stems = tables.map(({ schema, table }, i) => {
    let stem = `${safePart(schema)}.${safePart(table)}`;
    if (seen.has(stem)) stem = `${stem}~${i}`;
    seen.add(stem);
    return stem;
  });
  return (table, partition) => `${scope.folder}/${stems[table]}.part-${String(partition).padStart(4, '0')}${fileExtension(input)}`;
}

/**
 * Runs `work` over `items` with at most `limit` in flight, in order; deterministic (no timers).
 * `results` rejects at the first failure, after which no lane starts another item; `settled`
 * resolves once every lane has stopped, so a caller can wait for its readers before discarding.
 */
function inFlight<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): { results: Promise<R[]>; settled: Promise<unknown> } {
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
  const lanes = Array.from({ length: Math.min(limit, items.length) }, lane);
  return { results: Promise.all(lanes).then(() => results), settled: Promise.allSettled(lanes) };
}

export async function tableSetAttempt(input: ExtractionInput, scope: AttemptScope, status: ExtractionStatus, onProgress: () => void): Promise<Manifest> {
  const { workflowId, runId } = workflowInfo();
  const attemptKey = `${workflowId}/${runId}/attempt-${scope.attempt}`;
  const queue = await quick.holderTaskQueue();
  const holder = holderActivities(queue, input);
  const holdScope = new CancellationScope();
  const held = holdScope.run(() => holder.hold.holdSnapshot({ attemptKey, input }));
  let planReceived = false;
  const holdEnded = held.then(
    () => {
      throw asHolderFailure(new Error('the snapshot holder ended before completion'), true);
    },
    (err: unknown) => {
      throw asHolderFailure(err, planReceived);
    },
  );
  holdEnded.catch(() => undefined);
  const partitionScope = new CancellationScope();
  let copying: Promise<unknown> | null = null;
  try {
    const plan = await Promise.race([holder.control.awaitSnapshotSetPlan(attemptKey).catch((err) => Promise.reject(asHolderFailure(err, false))), holdEnded]);
    planReceived = true;
    await quick.prepareOutputFolder(scope.folder);
    const name = fileNamer(scope, input, plan.tables.map((t) => t.table));
    // Biggest table first, its ranges in order: the plan's order is the order partitions start.
    const items = plan.tables.flatMap((t, table) => t.ranges.map((range, partition) => ({ table, partition, range, name: name(table, partition) })));
    // Planned only once their folder exists: a discard then finds each file or proves it gone.
    scope.planned = items.map((item) => item.name);
    const remaining = plan.tables.map((t) => t.ranges.length);
    Object.assign(status, { partitionsTotal: items.length, tablesDone: 0, tablesTotal: plan.tables.length });
    onProgress();
    const extract = extractActivities(input);
    const inputs = plan.tables.map((t) => tableInput(input, `${t.table.schema}.${t.table.table}`));
    const copy = await partitionScope.run(async () =>
      inFlight(items, input.maxInFlight, async ({ table, partition, range, name: fileName }) => {
        const t = plan.tables[table]!;
        const file = await extract.copyPartition({
          input: inputs[table]!,
          snapshotId: plan.snapshotId,
          snapshotDigest: plan.snapshotDigest,
          source: plan.source,
          table: t.table,
          key: t.key,
          range,
          partition,
          name: fileName,
        });
        status.partitionsDone++;
        status.rows += file.rows;
        status.bytes += file.bytes;
        if (--remaining[table]! === 0) status.tablesDone!++;
        onProgress();
        return { ...file, table: inputs[table]!.table! };
      }),
    );
    copying = copy.settled;
    const files = await Promise.race([copy.results, holdEnded]);
    const receipt = await holder.control
      .completeSnapshot({ attemptKey, evidence: files.map((f) => ({ name: f.name, rows: f.rows, bytes: f.bytes, sha256: f.sha256 })) })
      .catch((err) => Promise.reject(asHolderFailure(err, true)));
    await held.catch(() => undefined);
    return {
      workflowId,
      table: runLabel(input),
      attempt: scope.attempt,
      strategy: 'partitioned_copy',
      coordinatorPid: plan.coordinatorPid,
      snapshotDigest: plan.snapshotDigest,
      files,
      totals: totals(files),
      columns: null,
      primaryKey: null,
      dataPackage: null,
      extractionReceipt: receipt,
    };
  } catch (err) {
    // Stop every reader of this snapshot before anyone discards its files.
    await CancellationScope.nonCancellable(async () => {
      partitionScope.cancel();
      holdScope.cancel();
      await copying;
    });
    throw err;
  }
}

/**
 * One extraction attempt over a set of tables: the holder exports one snapshot, resolves, locks
 * and plans every table in it (biggest first); each planned range is copied on any
 * worker, at most `maxInFlight` at a time over the whole run, and one receipt is completed on the
 * holder. The copies run in child workflows of BATCH_ITEMS ranges each (see copy-batch.ts), so
 * this workflow's history and payloads grow per batch. Small tables are copied in groups, one
 * activity per group (src/planning/table-groups.ts); runs started before groups replay without
 * them. Losing the holder fails the attempt as SNAPSHOT_LOST, as for one table.
 */
import { executeChild, patched } from '@temporalio/workflow';
import type { ExtractionInput } from '../contract/extraction-input';
import { dataPackageName, partName } from '../contract/file-names';
import type { Manifest, ManifestFile } from '../contract/extraction-types';
import { fileExtension } from '../contract/formats';
import { withoutTables } from '../contract/table-selection';
import { packageActivities } from './activity-stubs';
import type { AttemptEvents, AttemptScope } from './attempts';
import { groupSmallTables } from '../planning/table-groups';
import { type BatchGroup, type BatchItem, copyBatchWorkflow } from './copy-batch';
import { onHeldSnapshot } from './held-snapshot';
import { requirePlanFits } from './payload-budget';
import { FILE_NAMES_ANY_CASE, PLAN_BUDGET, SET_DATA_PACKAGE, SET_DATA_PACKAGE_BESIDE_COPY, SET_SETTLES_AFTER_COPY, TABLE_GROUPS } from './patches';

/** A file name part from a table name: safe on any file system and in any object key. */
function safePart(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 60);
}

/**
 * `<folder>/<schema>.<table>.part-NNNN.csv`, names made safe and told apart by the table's place in
 * the plan when they collide, in any case too (`Users` and `users` are one file name on a
 * case-insensitive file system) since FILE_NAMES_ANY_CASE.
 */
function fileNamer(scope: AttemptScope, input: ExtractionInput, tables: { schema: string; table: string }[]): (table: number, partition: number) => string {
  const seen = new Set<string>();
  // A run started before keeps its names: its data package already lists them.
  const fold = patched(FILE_NAMES_ANY_CASE) ? (stem: string) => stem.toLowerCase() : (stem: string) => stem;
  const stems = tables.map(({ schema, table }, i) => {
    let stem = `${safePart(schema)}.${safePart(table)}`;
    if (seen.has(fold(stem))) stem = `${stem}~${i}`;
    seen.add(fold(stem));
    return stem;
  });
  return (table, partition) => `${scope.folder}/${stems[table]}.${partName(partition)}${fileExtension(input)}`;
}

/** The last part of a file name (workflow code: no node:path). */
function baseName(name: string): string {
  return name.slice(name.lastIndexOf('/') + 1);
}

/** Ranges per child workflow: a batch's input and result (a few hundred bytes per range) stay well under Temporal's payload limits. */
const BATCH_ITEMS = 500;

/** Consecutive units of at most BATCH_ITEMS ranges each (a group counts its ranges; a group is never split). */
function batchesOf(units: readonly (BatchItem | BatchGroup)[]): (BatchItem | BatchGroup)[][] {
  const batches: (BatchItem | BatchGroup)[][] = [];
  let ranges = BATCH_ITEMS;
  for (const unit of units) {
    const size = 'group' in unit ? unit.group.length : 1;
    if (ranges + size > BATCH_ITEMS) {
      batches.push([]);
      ranges = 0;
    }
    batches.at(-1)!.push(unit);
    ranges += size;
  }
  return batches;
}

export async function tableSetAttempt(input: ExtractionInput, scope: AttemptScope, events: AttemptEvents): Promise<Manifest> {
  return onHeldSnapshot(
    input,
    scope,
    (control, attemptKey) => control.awaitSnapshotSetPlan(attemptKey),
    async (plan, copyScope, attemptKey) => {
      const name = fileNamer(
        scope,
        input,
        plan.tables.map((t) => t.table),
      );
      // Biggest table first, its ranges in order: the plan's order is the order partitions start.
      const planned = plan.tables.map(({ table, key, bytes, ranges }, t) => ({
        bytes,
        items: ranges.map((range, partition): BatchItem => ({ table, key, range, partition, name: name(t, partition) })),
      }));
      const items = planned.flatMap((t) => t.items);
      // Big tables' ranges first, then the groups of small tables (each about as much work as a range).
      let units: (BatchItem | BatchGroup)[] = items;
      if (patched(TABLE_GROUPS)) {
        const { big, groups } = groupSmallTables(planned, input.maxInFlight);
        units = [...big.flatMap((t) => t.items), ...groups.map((g) => ({ group: g.flatMap((t) => t.items) }))];
      }
      const names = items.map((item) => item.name);
      if (patched(PLAN_BUDGET)) requirePlanFits(names);
      events.planned({ partitions: items.length, tables: plan.tables.length, names });
      const remaining = new Map(plan.tables.map((t) => [`${t.table.schema}.${t.table.table}`, t.ranges.length]));
      const base = withoutTables(input);
      // One batch after another: together with each batch's own bound, at most maxInFlight partitions run at once.
      const copy = copyScope.run(async () => {
        const files: ManifestFile[] = [];
        let tablesDone = 0;
        for (const [batch, batchUnits] of batchesOf(units).entries()) {
          const workflowId = `${attemptKey}/batch-${batch}`;
          events.copying?.(workflowId);
          const done = await executeChild(copyBatchWorkflow, {
            workflowId,
            args: [
              {
                input: base,
                snapshotId: plan.snapshotId,
                snapshotDigest: plan.snapshotDigest,
                source: plan.source,
                items: batchUnits,
              },
            ],
          });
          for (const file of done) {
            const left = remaining.get(file.table!)! - 1;
            remaining.set(file.table!, left);
            if (left === 0) tablesDone++;
          }
          events.copying?.(null);
          events.done(done.length, done, tablesDone);
          files.push(...done);
        }
        return files;
      });
      // The package reads each table's column types inside the snapshot, so it is written before the receipt completes it.
      const packageInHold = copyScope.run(async () => {
        if (!patched(SET_DATA_PACKAGE_BESIDE_COPY)) await copy;
        if (!patched(SET_DATA_PACKAGE)) return null;
        const packageName = dataPackageName(scope.folder);
        events.writes(packageName);
        return packageActivities(input).writeSetDataPackage({
          input,
          name: packageName,
          snapshotId: plan.snapshotId,
          snapshotDigest: plan.snapshotDigest,
          source: plan.source,
          // Base names: the files are in the package's folder (a set's request names every file once).
          tables: planned.map((t, i) => ({ table: plan.tables[i]!.table, key: plan.tables[i]!.key, files: t.items.map((item) => baseName(item.name)) })),
        });
      });
      // Every reader stops before the attempt's outputs are discarded: an object a copy completes after its discard would outlive the run.
      const settled = patched(SET_SETTLES_AFTER_COPY) ? Promise.allSettled([copy, packageInHold]) : packageInHold.catch(() => undefined);
      return { ranges: items.length, files: copy, settled, packageInHold };
    },
  );
}

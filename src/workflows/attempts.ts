/**
 * One extraction attempt = one snapshot. Whole COPY runs a single activity; partitioned COPY
 * asks a worker for its holder queue, holds an exported snapshot there, runs one activity per
 * range on any worker, and completes the receipt on the holder. If the holder goes away the
 * attempt fails as SNAPSHOT_LOST, and the caller discards it and starts a fresh one.
 */
import { CancellationScope, patched, workflowInfo } from '@temporalio/workflow';
import { fileExtension } from '../contract/formats';
import type { ExtractionInput } from '../contract/extraction-input';
import type { DataPackageFile, Manifest, ManifestFile } from '../contract/extraction-types';
import type { SourceColumn } from '../contract/source-column';
import { fileBoundsOf } from '../contract/file-bounds';
import { batchFileName, batchPrefix, dataPackageName, partName } from '../contract/file-names';
import { runLabel } from '../contract/table-selection';
import { extractActivities, packageActivities, quickActivities } from './activity-stubs';
import { onHeldSnapshot, totals } from './held-snapshot';
import { DATA_PACKAGE, PACKAGE_WAITS_WHEN_CANCELLED, PACKAGE_WHILE_COMPLETING, WHOLE_COPY_FOLDER_BEFORE_DISCARD } from './patches';
import { folderOwner } from './run-key';

/** Which attempt, and the folder its files go to. */
export interface AttemptScope {
  readonly attempt: number;
  readonly folder: string;
}

/** What an attempt planned: its partitions (and a set's tables), and what a failed attempt must discard. */
export interface AttemptPlan {
  partitions: number;
  /** A set's tables; absent for one table. */
  tables?: number;
  /** The file names, one per partition (none for batched files, which are told as they close). */
  names: readonly string[];
  /** Name prefixes of batched files: a discard removes every file under them, named or not (a killed writer's). */
  prefixes?: readonly string[];
}

/**
 * What an attempt tells its caller as it goes; the caller keeps the run's status and the names a
 * failed attempt must discard. Names are told only once their folder exists, so a discard then
 * finds each file or proves it gone.
 */
export interface AttemptEvents {
  planned(plan: AttemptPlan): void;
  /** Another file the attempt writes (a batch file, its data package), discarded with the rest. */
  writes(name: string): void;
  /** `partitions` more partitions are complete with these files (and, in a set, this many tables in all). */
  done(partitions: number, files: readonly ManifestFile[], tablesDone?: number): void;
  /** A set's copy batch (child workflow) started, or none runs (null). */
  copying?(batchWorkflowId: string | null): void;
}

/** A partition's file name without its suffix; batched files add `-batch-NNNNN` to it. */
function partitionPrefix(scope: AttemptScope, partition: number): string {
  return `${scope.folder}/${partName(partition)}`;
}

function fileName(scope: AttemptScope, partition: number, input: ExtractionInput): string {
  return `${partitionPrefix(scope, partition)}${fileExtension(input)}`;
}

/** The names batched files were written under, told as soon as they exist (their number is known only then). */
function tellBatches(scope: AttemptScope, input: ExtractionInput, files: ManifestFile[], events: AttemptEvents): void {
  for (const f of files) events.writes(batchFileName(partitionPrefix(scope, f.partition), f.batch!, input));
}

export async function wholeCopyAttempt(input: ExtractionInput, scope: AttemptScope, events: AttemptEvents): Promise<Manifest> {
  const batched = fileBoundsOf(input) !== null;
  const name = batched ? partitionPrefix(scope, 0) : fileName(scope, 0, input);
  // A cancelled prepare (TRY_CANCEL) let the discard run while the folder was still being made: its marker then
  // landed in a folder nothing removes. Once it is made, the copy is not started in a cancelled run.
  const prepareFolder = () => quickActivities(input).prepareOutputFolder(scope.folder, folderOwner().runId);
  await (patched(WHOLE_COPY_FOLDER_BEFORE_DISCARD) ? CancellationScope.nonCancellable(prepareFolder) : prepareFolder());
  events.planned(batched ? { partitions: 1, names: [], prefixes: [batchPrefix(name)] } : { partitions: 1, names: [name] });
  const extract = extractActivities(input);
  const { files, receipt, snapshotDigest, columns, primaryKey } = batched
    ? await extract.wholeCopyBatches({ input, name })
    : await extract.wholeCopy({ input, name }).then(({ file, ...rest }) => ({ files: [file], ...rest }));
  if (batched) tellBatches(scope, input, files, events);
  events.done(1, files);
  return {
    workflowId: workflowInfo().workflowId,
    table: runLabel(input),
    attempt: scope.attempt,
    strategy: 'whole_copy',
    coordinatorPid: null,
    snapshotDigest,
    files,
    totals: totals(files),
    // Absent from results recorded by older code.
    columns: columns ?? null,
    primaryKey: primaryKey ?? null,
    dataPackage: null,
    extractionReceipt: receipt,
  };
}

export async function partitionedAttempt(input: ExtractionInput, scope: AttemptScope, events: AttemptEvents): Promise<Manifest> {
  return onHeldSnapshot(
    input,
    scope,
    (control, attemptKey) => control.awaitSnapshotPlan(attemptKey),
    async (plan, copyScope) => {
      const batched = fileBoundsOf(input) !== null;
      const names = batched ? [] : plan.ranges.map((_, i) => fileName(scope, i, input));
      events.planned({
        partitions: plan.ranges.length,
        names,
        ...(batched ? { prefixes: plan.ranges.map((_, i) => batchPrefix(partitionPrefix(scope, i))) } : {}),
      });
      const extract = extractActivities(input);
      const partitions = plan.ranges.map((range, partition) =>
        copyScope.run(async () => {
          const request = {
            input,
            snapshotId: plan.snapshotId,
            // Extra activity arguments change no command: replay-safe without patched().
            snapshotDigest: plan.snapshotDigest,
            source: plan.source,
            table: plan.table,
            key: plan.key,
            range,
            partition,
          };
          const files = batched
            ? await extract.copyPartitionBatches({ ...request, name: partitionPrefix(scope, partition) })
            : [await extract.copyPartition({ ...request, name: names[partition]! })];
          if (batched) tellBatches(scope, input, files, events);
          events.done(1, files);
          return files;
        }),
      );
      // In partition order, each partition's files in batch order.
      const files = Promise.all(partitions).then((done) => done.flat());
      // The package needs the files and the plan's columns, not the snapshot: it is written while the receipt
      // completes, not after (runs started before write it after the attempt, and replay so).
      const { columns, primaryKey } = plan;
      if (!patched(PACKAGE_WHILE_COMPLETING) || !columns || !primaryKey) return { ranges: partitions.length, files, settled: Promise.allSettled(partitions) };
      const packageBesideReceipt = copyScope.run(async () =>
        writeOneTablePackage(packageActivities(input), input, scope, { files: await files, columns, primaryKey }, events),
      );
      return { ranges: partitions.length, files, settled: Promise.allSettled([...partitions, packageBesideReceipt]), packageBesideReceipt };
    },
  );
}

/** A one-table package: its files (named as the attempt named them) and the plan's columns; none without files. */
async function writeOneTablePackage(
  stub: Pick<ReturnType<typeof packageActivities>, 'writeDataPackage'>,
  input: ExtractionInput,
  scope: AttemptScope,
  { files, columns, primaryKey }: { files: readonly ManifestFile[]; columns: SourceColumn[]; primaryKey: string[] },
  events: AttemptEvents,
): Promise<DataPackageFile | null> {
  if (files.length === 0) return null;
  const name = dataPackageName(scope.folder);
  events.writes(name);
  return stub.writeDataPackage({
    input,
    name,
    files: files.map((f) => (f.batch === undefined ? fileName(scope, f.partition, input) : batchFileName(partitionPrefix(scope, f.partition), f.batch, input))),
    columns,
    primaryKey,
  });
}

/**
 * Writes the attempt's `datapackage.json` next to its files and names it in the manifest. Part of
 * the attempt: planned before it is written, so a failed attempt discards it with the files.
 */
export async function withDataPackage(input: ExtractionInput, scope: AttemptScope, manifest: Manifest, events: AttemptEvents): Promise<Manifest> {
  // Runs started before data packages replay without this activity; a package written by the attempt is there already.
  if (!patched(DATA_PACKAGE) || manifest.dataPackage || !manifest.columns || !manifest.primaryKey) return manifest;
  const { columns, primaryKey, files } = manifest;
  // On the stub that waits for a cancelled write, so the attempt's discard never races a package that lands
  // after it (an orphan object on S3). Runs started before wrote it on the bookkeeping stub, and replay so.
  const stub = patched(PACKAGE_WAITS_WHEN_CANCELLED) ? packageActivities(input) : quickActivities(input);
  const dataPackage = await writeOneTablePackage(stub, input, scope, { files, columns, primaryKey }, events);
  return dataPackage ? { ...manifest, dataPackage } : manifest;
}

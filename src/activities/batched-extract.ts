/**
 * Batched extraction activities: one partition of an exported snapshot, or the whole table in
 * one transaction, written as a sequence of size-bounded files `<prefix>-batch-NNNNN<ext>`. A try
 * first removes whatever an earlier try of the same partition left under its prefix, so a retried
 * partition's files replace the earlier ones whole; a try that fails leaves its files to the next
 * try or to the attempt's discard (see {@link replacingBatches}).
 */
import { Context } from '@temporalio/activity';
import { ErrorCode, PgExtractError } from '../errors';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import { digestSourceToken } from '../postgres/source-token';
import { type BatchFile, copyBatchFiles } from '../postgres/batch-files';
import { BatchedCopy } from '../postgres/batched-copy';
import { resolveTable, sourceColumns } from '../postgres/catalog';
import { readPartition } from '../postgres/partition-copy';
import { closeSession, openSession } from '../postgres/session';
import type { ExtractionInput } from '../contract/extraction-input';
import type { ManifestFile } from '../contract/extraction-types';
import type { SourceColumn } from '../contract/source-column';
import { type FileBounds, fileBoundsOf } from '../contract/file-bounds';
import { batchFileName, batchPrefix } from '../contract/file-names';
import { sourceKindOf } from '../sources/source-kind';
import type { OutputStore } from '../storage/output-store';
import type { ExtractDeps } from './extract';
import { withFailures, withRangeFailures } from './failures';
import { heartbeatEvery } from './heartbeats';
import { countExtracted } from './metrics';
import type { PartitionRequest, WholeCopyRequest } from '../contract/activity-requests';
import { parseActivityRequest, partitionRequestSchema, wholeCopyRequestSchema } from '../contract/activity-requests';
import { manifestFileOf } from './manifest-file';
import { sinkOptionsOf } from './sink-options';
import { tableRequestOf } from './table-request';

function boundsOf(input: ExtractionInput): FileBounds {
  const bounds = fileBoundsOf(input);
  if (!bounds) throw new PgExtractError(ErrorCode.INPUT_INVALID, 'a batched copy needs maxFileBytes or maxFileRows', { field: 'maxFileBytes' });
  return bounds;
}

/**
 * Runs `write` with the files under `prefix` cleared first (what an earlier try left). A failed
 * write leaves its files: the next try clears them, and a failed attempt's discard removes every
 * file under the prefix. Clearing them here could remove a later try's files of the same names,
 * when this try outlived its heartbeat timeout and learns of its cancellation only after the retry began.
 */
async function replacingBatches<T>(store: OutputStore, prefix: string, write: () => Promise<T>): Promise<T> {
  await store.removeStartingWith(batchPrefix(prefix));
  return write();
}

export function createBatchedExtractActivities({ stores, sourceUrl }: ExtractDeps) {
  return {
    /** One planned range as bounded files; `name` is the partition's file name prefix (`…/part-0003`). */
    async copyPartitionBatches(raw: PartitionRequest): Promise<ManifestFile[]> {
      return withRangeFailures(async (reading) => {
        const req = parseActivityRequest(partitionRequestSchema, raw);
        reading(req);
        const bounds = boundsOf(req.input);
        const snapshotId = req.snapshotId;
        // Keyset batches import the exported snapshot on each try; a source without one (MySQL) has no batched path.
        if (snapshotId === null)
          throw new PgExtractError(ErrorCode.FILE_BOUND_INVALID, 'batched files need a PostgreSQL source (an exported snapshot)', { field: 'maxFileBytes' });
        const store = stores.of(req.name);
        const progress = { bytes: 0 };
        const stopBeats = heartbeatEvery(() => progress);
        try {
          return await replacingBatches(store, req.name, async () => {
            const client = await openSession(sourceUrl(req.input.source), 'partition', { signal: Context.current().cancellationSignal });
            try {
              const request = {
                ...req,
                snapshotId,
                snapshotDigest: req.snapshotDigest ?? undefined,
                format: req.input,
                lockTimeoutMs: req.input.timeouts.lockTimeoutMs,
              };
              const {
                result: files,
                backendPid,
                snapshotText,
              } = await readPartition(client, request, async (table) => {
                const written: BatchFile[] = [];
                for await (const f of copyBatchFiles(client, table, req.range, {
                  format: req.input,
                  bounds,
                  sink: (index) => store.sink(batchFileName(req.name, index, req.input), sinkOptionsOf(req.input)),
                  onBytes: (bytes) => (progress.bytes = bytes),
                  signal: Context.current().cancellationSignal,
                })) {
                  written.push(f);
                }
                return written;
              });
              for (const f of files) countExtracted(f, 'partition');
              return files.map((f) =>
                manifestFileOf(store, f, {
                  partition: req.partition,
                  batch: f.index,
                  range: req.range,
                  backendPid,
                  snapshotDigest: digestSourceToken(snapshotText),
                }),
              );
            } finally {
              await closeSession(client);
            }
          });
        } finally {
          stopBeats();
        }
      });
    },

    /** The whole table as bounded files from one REPEATABLE READ transaction; `name` is the file name prefix. */
    async wholeCopyBatches(
      raw: WholeCopyRequest,
    ): Promise<{ files: ManifestFile[]; receipt: ExtractionLifecycleReceipt; snapshotDigest: string; columns: SourceColumn[]; primaryKey: string[] }> {
      return withFailures(async () => {
        const { input, name } = parseActivityRequest(wholeCopyRequestSchema, raw);
        const bounds = boundsOf(input);
        const url = sourceUrl(input.source);
        if (sourceKindOf(url) !== 'postgresql')
          throw new PgExtractError(ErrorCode.FILE_BOUND_INVALID, 'batched files need a PostgreSQL source', { field: 'maxFileBytes' });
        const store = stores.of(name);
        const progress = { bytes: 0 };
        const stopBeats = heartbeatEvery(() => progress);
        try {
          return await replacingBatches(store, name, async () => {
            const client = await openSession(url, 'whole-copy', { signal: Context.current().cancellationSignal });
            try {
              const table = await resolveTable(client, tableRequestOf(input), { readRows: true, format: input.format });
              const copy = new BatchedCopy(client, table, {
                format: input,
                bounds,
                sink: (index) => store.sink(batchFileName(name, index, input), sinkOptionsOf(input)),
                evidenceName: (location) => store.evidenceName(location),
                onBytes: (bytes) => (progress.bytes = bytes),
                signal: Context.current().cancellationSignal,
                lockTimeoutMs: input.timeouts.lockTimeoutMs,
              });
              const files: BatchFile[] = [];
              for await (const f of copy) files.push(f);
              await copy.endRead();
              for (const f of files) countExtracted(f, 'whole_copy');
              const snapshotDigest = copy.snapshotDigest!;
              return {
                files: files.map((f) =>
                  manifestFileOf(store, f, { partition: 0, batch: f.index, range: { kind: 'all' }, backendPid: copy.backendPid!, snapshotDigest }),
                ),
                receipt: copy.authority.latest()!,
                snapshotDigest,
                columns: sourceColumns(table),
                primaryKey: table.primaryKey,
              };
            } finally {
              await closeSession(client);
            }
          });
        } finally {
          stopBeats();
        }
      });
    },
  };
}

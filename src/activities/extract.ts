/**
 * Extraction activities: one partition of a source's read (src/sources: for PostgreSQL, of the
 * exported snapshot), or a whole-table read. Each runs on its own session, heartbeats bytes
 * written, and writes its output (a local file or an S3 object) atomically so a retry replaces it
 * rather than appending.
 */
import { Context } from '@temporalio/activity';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import { resolveTable, sourceColumns } from '../postgres/catalog';
import { closeSession, openSession } from '../postgres/session';
import { wholeCopy as wholeCopyTable } from '../postgres/whole-copy';
import type { ManifestFile } from '../contract/extraction-types';
import type { SourceColumn } from '../contract/source-column';
import type { OutputStores } from '../storage/output-stores';
import { sourceAdapter } from '../sources/adapters';
import { readWhole } from '../sources/whole-read';
import { withFailures, withRangeFailures } from './failures';
import { heartbeatEvery } from './heartbeats';
import { countExtracted } from './metrics';
import type { PartitionRequest, WholeCopyRequest } from '../contract/activity-requests';
import { parseActivityRequest, partitionRequestSchema, wholeCopyRequestSchema } from '../contract/activity-requests';
import { manifestFileOf } from './manifest-file';
import { sinkOptionsOf } from './sink-options';
import { tableRequestOf } from './table-request';

export interface ExtractDeps {
  /** Where outputs go: the local output root or a bucket, by name. */
  stores: OutputStores;
  sourceUrl: (name: string) => string;
}

/** Heartbeat details of an extraction activity. */
export interface CopyProgress {
  bytes: number;
}

export function createExtractActivities({ stores, sourceUrl }: ExtractDeps) {
  return {
    async copyPartition(raw: PartitionRequest): Promise<ManifestFile> {
      return withRangeFailures(async (reading) => {
        const req = parseActivityRequest(partitionRequestSchema, raw);
        reading(req);
        const adapter = sourceAdapter(sourceUrl(req.input.source));
        const store = stores.of(req.name);
        const output = await store.sink(req.name, sinkOptionsOf(req.input));
        const progress: CopyProgress = { bytes: 0 };
        const stopBeats = heartbeatEvery(() => progress);
        try {
          const handle = { snapshotId: req.snapshotId, snapshotDigest: req.snapshotDigest ?? null, source: req.source, table: req.table, key: req.key };
          const file = await adapter.copyRange(handle, req.range, output, {
            format: req.input,
            lockTimeoutMs: req.input.timeouts.lockTimeoutMs,
            onBytes: (bytes) => (progress.bytes = bytes),
            signal: Context.current().cancellationSignal,
          });
          countExtracted(file, 'partition');
          return manifestFileOf(store, file, { partition: req.partition, range: req.range, backendPid: file.sessionId, snapshotDigest: file.snapshotDigest });
        } finally {
          stopBeats();
        }
      });
    },

    async wholeCopy(
      raw: WholeCopyRequest,
    ): Promise<{ file: ManifestFile; receipt: ExtractionLifecycleReceipt; snapshotDigest: string | null; columns: SourceColumn[]; primaryKey: string[] }> {
      return withFailures(async () => {
        const { input, name } = parseActivityRequest(wholeCopyRequestSchema, raw);
        const url = sourceUrl(input.source);
        const adapter = sourceAdapter(url);
        const store = stores.of(name);
        const progress: CopyProgress = { bytes: 0 };
        const stopBeats = heartbeatEvery(() => progress);
        // PostgreSQL's whole copy is a strategy of its own (one REPEATABLE READ transaction); other sources read their one range.
        if (adapter.kind !== 'postgresql') {
          try {
            const { copy, receipt, table } = await readWhole(adapter, tableRequestOf(input), () => store.sink(name, sinkOptionsOf(input)), {
              format: input,
              lockTimeoutMs: input.timeouts.lockTimeoutMs,
              onBytes: (bytes) => (progress.bytes = bytes),
              signal: Context.current().cancellationSignal,
              evidenceName: (location) => store.evidenceName(location),
            });
            countExtracted(copy, 'whole_copy');
            const { sessionId, snapshotDigest } = copy;
            return {
              file: manifestFileOf(store, copy, { partition: 0, range: { kind: 'all' }, backendPid: sessionId, snapshotDigest }),
              receipt,
              snapshotDigest,
              columns: table.columns,
              primaryKey: table.primaryKey,
            };
          } finally {
            stopBeats();
          }
        }
        const client = await openSession(url, 'whole-copy', { signal: Context.current().cancellationSignal });
        try {
          const table = await resolveTable(client, tableRequestOf(input), { readRows: true, format: input.format });
          const output = await store.sink(name, sinkOptionsOf(input));
          const result = await wholeCopyTable(client, table, output, {
            format: input,
            name: store.evidenceName(output.location),
            onBytes: (bytes) => (progress.bytes = bytes),
            signal: Context.current().cancellationSignal,
            lockTimeoutMs: input.timeouts.lockTimeoutMs,
          });
          const f = result.artifact;
          countExtracted(f, 'whole_copy');
          return {
            file: manifestFileOf(store, f, { partition: 0, range: { kind: 'all' }, backendPid: f.backendPid, snapshotDigest: f.snapshotDigest }),
            receipt: result.extractionReceipt!,
            snapshotDigest: f.snapshotDigest,
            columns: sourceColumns(table),
            primaryKey: table.primaryKey,
          };
        } finally {
          stopBeats();
          await closeSession(client);
        }
      });
    },
  };
}

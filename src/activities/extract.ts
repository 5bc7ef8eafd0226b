/**
 * Extraction activities: one partition of an exported snapshot, or a whole-table COPY. Each runs
 * on its own session, heartbeats bytes written, and writes its output (a local file or an S3
 * object) atomically so a retry replaces it rather than appending.
 */
import { Context } from '@temporalio/activity';
import { digestSourceToken } from '../postgres/source-token';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import { resolveTable, sourceColumns } from '../postgres/catalog';
import { copyPartition as copyPartitionRange } from '../postgres/partition-copy';
import { closeSession, openSession } from '../postgres/session';
import { wholeCopy as wholeCopyTable } from '../postgres/whole-copy';
import type { ManifestFile, SourceColumn } from '../contract/extraction-types';
import type { OutputStores } from '../storage/output-stores';
import { withFailures } from './failures';
import { heartbeatEvery, heartbeatInterval } from './heartbeats';
import { countExtracted } from './metrics';
import { type PartitionActivityRequest, type WholeCopyActivityRequest, parseNamed, parsePartitionRequest } from './requests';
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
    async copyPartition(raw: PartitionActivityRequest): Promise<ManifestFile> {
      return withFailures(async () => {
        const req = parsePartitionRequest(raw);
        const url = sourceUrl(req.input.source);
        const store = stores.of(req.name);
        const output = await store.sink(req.name);
        const progress: CopyProgress = { bytes: 0 };
        const stopBeats = heartbeatEvery(heartbeatInterval(), () => progress);
        const client = await openSession(url, 'partition');
        try {
          const file = await copyPartitionRange(
            client,
            {
              snapshotId: req.snapshotId,
              snapshotDigest: req.snapshotDigest,
              source: req.source,
              table: req.table,
              key: req.key,
              range: req.range,
              format: req.input,
              lockTimeoutMs: req.input.timeouts.lockTimeoutMs,
            },
            output,
            { onBytes: (bytes) => (progress.bytes = bytes), signal: Context.current().cancellationSignal },
          );
          countExtracted(file, 'partition');
          return {
            path: file.location,
            name: store.evidenceName(file.location),
            etag: file.etag,
            partition: req.partition,
            range: req.range,
            rows: file.rows,
            bytes: file.bytes,
            sha256: file.sha256,
            backendPid: file.backendPid,
            snapshotDigest: digestSourceToken(file.snapshotText),
          };
        } finally {
          stopBeats();
          await closeSession(client);
        }
      });
    },

    async wholeCopy(
      raw: WholeCopyActivityRequest,
    ): Promise<{ file: ManifestFile; receipt: ExtractionLifecycleReceipt; snapshotDigest: string; columns: SourceColumn[]; primaryKey: string[] }> {
      return withFailures(async () => {
        const { input, name } = parseNamed(raw);
        const url = sourceUrl(input.source);
        const store = stores.of(name);
        const progress: CopyProgress = { bytes: 0 };
        const stopBeats = heartbeatEvery(heartbeatInterval(), () => progress);
        const client = await openSession(url, 'whole-copy');
        try {
          const table = await resolveTable(client, tableRequestOf(input));
          const output = await store.sink(name);
          const result = await wholeCopyTable(client, table, output, {
            format: input,
            name: store.evidenceName(output.location),
            onBytes: (bytes) => (progress.bytes = bytes),
            signal: Context.current().cancellationSignal,
          });
          const f = result.artifact;
          countExtracted(f, 'whole_copy');
          return {
            file: {
              path: f.location,
              name: store.evidenceName(f.location),
              etag: f.etag,
              partition: 0,
              range: { kind: 'all' },
              rows: f.rows,
              bytes: f.bytes,
              sha256: f.sha256,
              backendPid: f.backendPid,
              snapshotDigest: f.snapshotDigest,
            },
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

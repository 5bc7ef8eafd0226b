/**
 * Extraction activities: one partition of an exported snapshot, or a whole-table COPY. Each runs
 * on its own session, heartbeats bytes written, and writes its file atomically so a retry
 * replaces it rather than appending.
 */
import { Context } from '@temporalio/activity';
import { relative } from 'node:path';
import { digestSourceToken } from '../lifecycle/source-token';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import { resolveTable } from '../postgres/catalog';
import { copyPartition as copyPartitionRange } from '../postgres/partition-copy';
import { closeSession, openSession } from '../postgres/session';
import { wholeCopy as wholeCopyTable } from '../postgres/whole-copy';
import { checkOutputFile } from '../output-root';
import type { ManifestFile } from '../shared/extraction-types';
import { withFailures } from './failures';
import { heartbeatEvery, heartbeatInterval } from './heartbeats';
import { countExtracted } from './metrics';
import { type PartitionActivityRequest, type WholeCopyActivityRequest, parseNamed, parsePartitionRequest } from './requests';
import { tableRequestOf } from './table-request';

export interface ExtractDeps {
  outputRoot: string;
  sourceUrl: (name: string) => string;
  /** Mode of written files (folders get the matching mode). @default 0o600 */
  fileMode?: number;
}

/** Heartbeat details of an extraction activity. */
export interface CopyProgress {
  bytes: number;
}

export function createExtractActivities({ outputRoot, sourceUrl, fileMode }: ExtractDeps) {
  return {
    async copyPartition(raw: PartitionActivityRequest): Promise<ManifestFile> {
      return withFailures(async () => {
        const req = parsePartitionRequest(raw);
        const url = sourceUrl(req.input.source);
        const path = await checkOutputFile(outputRoot, req.name);
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
            path,
            { onBytes: (bytes) => (progress.bytes = bytes), signal: Context.current().cancellationSignal, mode: fileMode },
          );
          countExtracted(file, 'partition');
          return {
            path,
            name: relative(outputRoot, path),
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

    async wholeCopy(raw: WholeCopyActivityRequest): Promise<{ file: ManifestFile; receipt: ExtractionLifecycleReceipt; snapshotDigest: string }> {
      return withFailures(async () => {
        const { input, name } = parseNamed(raw);
        const url = sourceUrl(input.source);
        const path = await checkOutputFile(outputRoot, name);
        const progress: CopyProgress = { bytes: 0 };
        const stopBeats = heartbeatEvery(heartbeatInterval(), () => progress);
        const client = await openSession(url, 'whole-copy');
        try {
          const table = await resolveTable(client, tableRequestOf(input));
          const result = await wholeCopyTable(client, table, path, {
            format: input,
            name: relative(outputRoot, path),
            onBytes: (bytes) => (progress.bytes = bytes),
            signal: Context.current().cancellationSignal,
            fileMode,
          });
          const f = result.artifact;
          countExtracted(f, 'whole_copy');
          return {
            file: {
              path,
              name: relative(outputRoot, path),
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
          };
        } finally {
          stopBeats();
          await closeSession(client);
        }
      });
    },
  };
}

/**
 * copyTables: a group of small tables' planned ranges on one session and one snapshot import,
 * one file (and one manifest entry) per range exactly as copyPartition writes it. It heartbeats
 * the ranges done; a retry first removes whatever an earlier try of the group left under its
 * files' names (committed files and temp files of a killed worker), so it rewrites the group whole.
 * Its files are one sink batch: their folder is checked once and fsynced once, before they are reported.
 */
import { Context } from '@temporalio/activity';
import type { ManifestFile } from '../contract/extraction-types';
import { digestSourceToken } from '../postgres/source-token';
import { closeSession, openSession } from '../postgres/session';
import { copyTableGroup } from '../postgres/table-group-copy';
import type { ExtractDeps } from './extract';
import { withRangeFailures } from './failures';
import { heartbeatEvery } from './heartbeats';
import { countExtracted } from './metrics';
import { manifestFileOf } from './manifest-file';
import { sinkOptionsOf } from './sink-options';
import { type TableGroupRequest, parseActivityRequest, tableGroupRequestSchema } from '../contract/activity-requests';

/** Heartbeat details of a group: bytes written and ranges done so far. */
export interface GroupProgress {
  bytes: number;
  ranges: number;
}

export function createTableGroupActivities({ stores, sourceUrl }: ExtractDeps) {
  return {
    async copyTables(raw: TableGroupRequest): Promise<ManifestFile[]> {
      return withRangeFailures(async (reading) => {
        const req = parseActivityRequest(tableGroupRequestSchema, raw);
        const ctx = Context.current();
        const progress: GroupProgress = { bytes: 0, ranges: 0 };
        const stopBeats = heartbeatEvery(() => progress);
        try {
          if (ctx.info.attempt > 1) for (const { name } of req.ranges) await stores.of(name).removeStartingWith(name);
          const sinks = stores.batch();
          const client = await openSession(sourceUrl(req.input.source), 'partition', { signal: ctx.cancellationSignal });
          try {
            const read = await copyTableGroup(
              client,
              {
                snapshotId: req.snapshotId,
                snapshotDigest: req.snapshotDigest,
                source: req.source,
                lockTimeoutMs: req.input.timeouts.lockTimeoutMs,
                givesWay: true,
              },
              req.ranges,
              {
                format: req.input,
                // A range is read from its sink's start to its file's commit: a failure outside one (the import, the sync) is the group's.
                sink: (i) => {
                  reading(req.ranges[i]!);
                  return sinks.sink(req.ranges[i]!.name, sinkOptionsOf(req.input));
                },
                // The heartbeat timer sends it; a heartbeat per file cost the worker's main thread about 0.1 ms a file.
                onFile: (i) => {
                  progress.ranges = i + 1;
                  reading(null);
                },
                onBytes: (bytes) => (progress.bytes = bytes),
                signal: ctx.cancellationSignal,
              },
            );
            await sinks.sync();
            const snapshotDigest = digestSourceToken(read.snapshotText);
            return read.files.map((file, i) => {
              countExtracted(file, 'partition');
              const { name, partition, range } = req.ranges[i]!;
              return manifestFileOf(stores.of(name), file, { partition, range, backendPid: read.backendPid, snapshotDigest });
            });
          } finally {
            await closeSession(client);
          }
        } finally {
          stopBeats();
        }
      });
    },
  };
}

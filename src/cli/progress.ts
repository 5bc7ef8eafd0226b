/**
 * Follows a run until its manifest exists, reporting progress: a redrawn bar with rows, bytes,
 * MB/s and an ETA on a terminal, one plain line per change otherwise. Live bytes come from the
 * running partitions' heartbeats (describe → pending activities: the run's, or in a set's run its
 * running copy batch's), finished ones from the status.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { liveStatus, waitForManifest } from '../client';
import type { ExtractionStatus, Manifest } from '../contract/extraction-types';

/** Bytes reported by the heartbeats of the run's pending activities. */
async function heartbeatBytes(handle: WorkflowHandle): Promise<number> {
  const { raw } = await handle.describe();
  let bytes = 0;
  for (const activity of raw.pendingActivities ?? []) {
    const payload = activity.heartbeatDetails?.payloads?.[0];
    if (!payload) continue;
    const details = defaultPayloadConverter.fromPayload<{ bytes?: unknown }>(payload);
    if (typeof details?.bytes === 'number') bytes += details.bytes;
  }
  return bytes;
}

function formatSeconds(s: number): string {
  return s >= 90 ? `${Math.round(s / 60)}m` : `${Math.max(0, Math.round(s))}s`;
}

function progressLine(s: ExtractionStatus, liveBytes: number, elapsedSeconds: number, width = 20): string {
  const total = Math.max(1, s.partitionsTotal);
  const filled = Math.round((s.partitionsDone / total) * width);
  const bytes = s.bytes + liveBytes;
  const rate = elapsedSeconds > 0 ? bytes / 1e6 / elapsedSeconds : 0;
  const eta = s.partitionsDone > 0 && s.partitionsDone < total ? ` ETA ${formatSeconds((elapsedSeconds / s.partitionsDone) * (total - s.partitionsDone))}` : '';
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${s.phase} ${s.partitionsDone}/${s.partitionsTotal} partitions, ${s.rows.toLocaleString('en-US')} rows, ${(bytes / 1e6).toFixed(1)} MB, ${rate.toFixed(1)} MB/s${eta}`;
}

/** Waits for the manifest (or the run's end), writing progress to `out` on every poll. */
export async function followProgress(handle: WorkflowHandle, out: NodeJS.WriteStream, pollMs = 500): Promise<Manifest> {
  const started = Date.now();
  let last = '';
  return waitForManifest(handle, pollMs, async (manifest) => {
    // Asked after the manifest, the status is never older than it (two queries can be answered
    // from different workflow states); queries answer on closed runs too.
    // A run no worker answers for a while (a restart) fails the query after about a minute: the run goes on,
    // and so does the wait, as `--json`'s does.
    const status = await liveStatus(handle).catch(() => null);
    if (!status) {
      if (manifest && out.isTTY) out.write('\n');
      return;
    }
    if (out.isTTY) {
      const copying = status.batchWorkflowId ? handle.client.getHandle(status.batchWorkflowId) : handle;
      const live = manifest ? 0 : await heartbeatBytes(copying).catch(() => 0);
      out.write(`\r${progressLine(status, live, (Date.now() - started) / 1000)}\x1b[K${manifest ? '\n' : ''}`);
    } else {
      const line = `${status.phase} ${status.partitionsDone}/${status.partitionsTotal} partitions, ${status.rows} rows`;
      if (line !== last) out.write(`${line}\n`);
      last = line;
    }
  });
}

/**
 * PostgreSQL as a source adapter: a thin layer over the existing strategies. A read is a
 * coordinator session holding an exported snapshot (SnapshotCoordinator); ranges import it on
 * sessions of their own (copyPartition) and prove it by digest; the server clock stamps the
 * window. It may claim the exported snapshot, because every range proves it imported it.
 */
import { ErrorCode, PgExtractError } from '../errors';
import { ClockAuthority, SnapshotAuthority } from '../lifecycle/receipt';
import { digestSourceToken } from '../postgres/source-token';
import { sourceColumns } from '../postgres/catalog';
import { copyPartition } from '../postgres/partition-copy';
import { closeSession, openSession } from '../postgres/session';
import { type SnapshotPlan, type SnapshotSetPlan, SnapshotCoordinator } from '../postgres/snapshot-coordinator';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../contract/extraction-input';
import { checkExhausted } from './exhaustion';
import type { Client } from 'pg';
import type { FileReceipt } from '../contract/file-receipt';
import type { TableSelection } from '../postgres/table-set';
import type { OpenOptions, SourceAdapter, SourceRead } from './source-adapter';
import type { TerminalOutcome } from '../lifecycle/terminal';

export function postgresAdapter(url: string): SourceAdapter {
  return {
    kind: 'postgresql',
    claims: { clockAuthority: ClockAuthority.postgresqlServer, snapshotAuthority: SnapshotAuthority.exportedSnapshot },

    async open(request, options): Promise<SourceRead> {
      const client = await openSession(url, 'coordinator', { signal: options.signal });
      const coordinator = await exportOn(client, (c) => SnapshotCoordinator.export(c, request, options, lockingOf(options)));
      const { plan } = coordinator;
      const read = {
        ...coordinatorRead(client, coordinator, (evidence, rangesRead) => checkExhausted(read.plan.ranges.length, evidence, rangesRead)),
        handle: {
          snapshotId: plan.snapshotId,
          snapshotDigest: digestSourceToken(plan.snapshotText),
          source: plan.source,
          table: { schema: plan.table.schema, table: plan.table.table, columns: plan.table.columns.map((c) => c.name) },
          key: plan.table.key,
        },
        plan: {
          table: {
            schema: plan.table.schema,
            table: plan.table.table,
            columns: sourceColumns(plan.table),
            primaryKey: plan.table.primaryKey,
            key: plan.table.key,
          },
          ranges: plan.ranges,
          rowCount: plan.rowCount,
          coordinatorPid: plan.coordinatorPid,
        },
      };
      return read as SourceRead;
    },

    async copyRange(handle, range, sink, options) {
      if (handle.snapshotId === null)
        throw new PgExtractError(ErrorCode.SNAPSHOT_ID_INVALID, 'a PostgreSQL range needs the exported snapshot id', { field: 'snapshotId' });
      const client = await openSession(url, 'partition', { signal: options.signal });
      try {
        const file = await copyPartition(
          client,
          {
            snapshotId: handle.snapshotId,
            snapshotDigest: handle.snapshotDigest ?? undefined,
            source: handle.source,
            table: handle.table,
            key: handle.key,
            range,
            format: options.format,
            lockTimeoutMs: options.lockTimeoutMs,
            // The run's holder keeps the snapshot: an attempt that gives way is followed by a fresh one.
            givesWay: true,
          },
          sink,
          { onBytes: options.onBytes, signal: options.signal },
        );
        return {
          location: file.location,
          etag: file.etag,
          rows: file.rows,
          bytes: file.bytes,
          sha256: file.sha256,
          sessionId: file.backendPid,
          snapshotDigest: digestSourceToken(file.snapshotText),
          startedAt: file.startedAt,
          completedAt: file.completedAt,
        };
      } finally {
        await closeSession(client);
      }
    },
  };
}

/**
 * Many tables at one snapshot (a run of `tables` or `schema`): one coordinator session exports,
 * resolves, locks and plans every table; the read ends like a one-table read.
 */
export async function openPostgresTableSet(url: string, selection: TableSelection, options: OpenOptions): Promise<HeldRead & { plan: SnapshotSetPlan }> {
  const client = await openSession(url, 'coordinator', { signal: options.signal });
  const coordinator = await exportOn(client, (c) => SnapshotCoordinator.exportSet(c, selection, options, lockingOf(options)));
  const ranges = coordinator.plan.tables.reduce((n, t) => n + t.ranges.length, 0);
  return {
    ...coordinatorRead(client, coordinator, (evidence, rangesRead) => checkExhausted(ranges, evidence, rangesRead)),
    plan: coordinator.plan,
  };
}

/** What the snapshot holder keeps of a read: the probe and the close. */
export type HeldRead = Pick<SourceRead, 'probe' | 'close'>;

function lockingOf(options: OpenOptions): { lockTimeoutMs: number } {
  return { lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS };
}

/** Exports on a fresh coordinator session; a failed export closes the session. */
async function exportOn<C>(client: Client, exporting: (client: Client) => Promise<C>): Promise<C> {
  try {
    return await exporting(client);
  } catch (err) {
    await closeSession(client);
    throw err;
  }
}

/** A coordinator session as a read: probe it; close it once, completing the receipt only on success. */
function coordinatorRead(
  client: Client,
  coordinator: SnapshotCoordinator<SnapshotPlan | SnapshotSetPlan>,
  checkEvidence: (evidence: readonly FileReceipt[], rangesRead: number | undefined) => void,
): HeldRead & Pick<SourceRead, 'receipt'> {
  let open = true;
  // Rolls back whatever is still open (nothing after a COMMIT) and ends the session, once.
  const end = async (): Promise<void> => {
    if (!open) return;
    open = false;
    await coordinator.abort();
    await closeSession(client);
  };
  return {
    receipt: () => coordinator.authority.latest()!,
    probe: () => coordinator.probe(),
    async close(outcome: TerminalOutcome, evidence?: readonly FileReceipt[], rangesRead?: number) {
      if (outcome !== 'success') {
        await end();
        return null;
      }
      checkEvidence(evidence ?? [], rangesRead);
      if (!open) throw new PgExtractError(ErrorCode.SNAPSHOT_LOST, 'the read was already closed');
      try {
        await coordinator.requireUnchanged();
        return await coordinator.complete(evidence ?? []);
      } finally {
        await end();
      }
    },
  } as HeldRead & Pick<SourceRead, 'receipt'>;
}

/**
 * PostgreSQL as a source adapter: a thin layer over the existing strategies. A read is a
 * coordinator session holding an exported snapshot (SnapshotCoordinator); ranges import it on
 * sessions of their own (copyPartition) and prove it by digest; the server clock stamps the
 * window. It may claim the exported snapshot, because every range proves it imported it.
 */
import { ErrorCode, PgExtractError } from '../errors';
import { ClockAuthority, SnapshotAuthority } from '../lifecycle/receipt';
import { digestSourceToken } from '../lifecycle/source-token';
import { type TableRequest, resolveTable, sourceColumns } from '../postgres/catalog';
import { copyPartition } from '../postgres/partition-copy';
import { closeSession, openSession } from '../postgres/session';
import { SnapshotCoordinator } from '../postgres/snapshot-coordinator';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../postgres/table-lock';
import { checkExhausted } from './exhaustion';
import type { SourceAdapter, SourceRead, SourceTable } from './source-adapter';

export function postgresAdapter(url: string): SourceAdapter {
  return {
    kind: 'postgresql',
    claims: { clockAuthority: ClockAuthority.postgresqlServer, snapshotAuthority: SnapshotAuthority.exportedSnapshot },

    async describe(request: TableRequest): Promise<SourceTable> {
      const client = await openSession(url, 'probe');
      try {
        const table = await resolveTable(client, request);
        return { schema: table.schema, table: table.table, columns: sourceColumns(table), primaryKey: table.primaryKey, key: table.key };
      } finally {
        await closeSession(client);
      }
    },

    async open(request, options): Promise<SourceRead> {
      const client = await openSession(url, 'coordinator');
      let coordinator: SnapshotCoordinator;
      try {
        coordinator = await SnapshotCoordinator.export(client, request, { partitions: options.partitions }, { lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS });
      } catch (err) {
        await closeSession(client);
        throw err;
      }
      const { plan } = coordinator;
      let open = true;
      // Rolls back whatever is still open (nothing after a COMMIT) and ends the session, once.
      const end = async (): Promise<void> => {
        if (!open) return;
        open = false;
        await coordinator.abort();
        await closeSession(client);
      };
      const read = {
        handle: {
          snapshotId: plan.snapshotId,
          snapshotDigest: digestSourceToken(plan.snapshotText),
          source: plan.source,
          table: { schema: plan.table.schema, table: plan.table.table, columns: plan.table.columns.map((c) => c.name) },
          key: plan.table.key,
        },
        plan: {
          table: { schema: plan.table.schema, table: plan.table.table, columns: sourceColumns(plan.table), primaryKey: plan.table.primaryKey, key: plan.table.key },
          ranges: plan.ranges,
          rowCount: plan.rowCount,
          coordinatorPid: plan.coordinatorPid,
        },
        receipt: () => coordinator.authority.latest()!,
        probe: () => coordinator.probe(),
        async close(outcome: 'success' | 'abort' | 'retain', evidence?: readonly { name: string; rows: number; bytes: number; sha256: string }[]) {
          if (outcome !== 'success') {
            await end();
            return null;
          }
          checkExhausted(read.plan, evidence ?? []);
          if (!open) throw new PgExtractError(ErrorCode.SNAPSHOT_LOST, 'the read was already closed');
          try {
            return await coordinator.complete(evidence ?? []);
          } finally {
            await end();
          }
        },
      };
      return read as SourceRead;
    },

    async copyRange(handle, range, sink, options) {
      if (handle.snapshotId === null) throw new PgExtractError(ErrorCode.SNAPSHOT_ID_INVALID, 'a PostgreSQL range needs the exported snapshot id', { field: 'snapshotId' });
      const client = await openSession(url, 'partition');
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

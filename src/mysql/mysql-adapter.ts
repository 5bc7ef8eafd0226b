/**
 * MySQL/MariaDB as a source adapter (`mysql://` or `mariadb://` source URLs). It has no snapshot
 * that separate sessions can share, so it claims none: each range is one SELECT on a session of
 * its own, at its own time; the window is the orchestrator's UTC clock (opened before planning
 * reads anything, completed after every range is receipted); snapshotAuthority and sourceToken
 * stay null and every receipt says `pointInTime: false`. A read holds no session between ranges.
 */
import { ExtractionLifecycleAuthority } from '../lifecycle/authority';
import { ClockAuthority } from '../lifecycle/receipt';
import { checkExhausted } from '../sources/exhaustion';
import type { SourceAdapter, SourceRead } from '../sources/source-adapter';
import { describeMysqlTable } from './catalog';
import { closeMysql, openMysql } from './connection';
import { planMysqlRanges } from './planner';
import { copyMysqlRange } from './range-copy';
import type { TerminalOutcome } from '../lifecycle/terminal';

export function mysqlAdapter(url: string): SourceAdapter {
  return {
    kind: 'mysql',
    claims: { clockAuthority: ClockAuthority.orchestratorUtc, snapshotAuthority: null },

    async open(request, options): Promise<SourceRead> {
      const conn = await openMysql(url, 'planner');
      try {
        const authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.orchestratorUtc, pointInTime: false });
        authority.acquire();
        const table = await describeMysqlTable(conn, request);
        const { ranges, rowCount } = await planMysqlRanges(conn, table, options.partitions);
        const plan = { table, ranges, rowCount, coordinatorPid: null };
        const read = {
          handle: {
            snapshotId: null,
            snapshotDigest: null,
            table: { schema: table.schema, table: table.table, columns: table.columns.map((c) => c.name) },
            key: table.key,
          },
          plan,
          receipt: () => authority.latest()!,
          probe: async () => undefined,
          async close(outcome: TerminalOutcome, evidence?: readonly { name: string; rows: number; bytes: number; sha256: string }[], rangesRead?: number) {
            if (outcome !== 'success') return null;
            checkExhausted(plan.ranges.length, evidence ?? [], rangesRead);
            return authority.complete(evidence ?? []);
          },
        };
        return read as SourceRead;
      } finally {
        await closeMysql(conn);
      }
    },

    async copyRange(handle, range, sink, options) {
      const conn = await openMysql(url, 'partition');
      try {
        return await copyMysqlRange(conn, handle, range, sink, options);
      } finally {
        await closeMysql(conn);
      }
    },
  };
}

/**
 * The coordinator of a partitioned export: one session whose REPEATABLE READ READ ONLY
 * transaction exports a snapshot (pg_export_snapshot()), takes ACCESS SHARE on the table (or on
 * every table of a set) and plans its ranges inside it (sized by range-sizing.ts). The snapshot
 * lives only while this transaction is open, so it stays open (its holder probes it; 30 s idle
 * ends it) until every partition has finished; then complete() commits.
 */
import type { ClientBase } from 'pg';
import { ClockAuthority, ExtractionLifecycleAuthority, type Evidence, type ExtractionLifecycleReceipt, SnapshotAuthority } from '../lifecycle';
import { digestSourceToken } from './source-token';
import { rollbackAfter } from './session';
import { type ResolvedTable, type TableRequest, resolveTable } from './catalog';
import { type TablePlan, type TableSelection, biggestFirst, partitionsBySize, resolveTableSet, tableSizes } from './table-set';
import type { ExportFormat } from '../contract/formats';
import type { PartitionRange, SourceIdentity } from '../contract/partition-range';
import { AUTO_MAX_PARTITIONS } from '../planning/range-planner';
import { type PlanningOptions, planRanges } from './range-sizing';
import { serverNow, utcText } from './server-clock';
import { type IdentityRow, SOURCE_IDENTITY_COLUMNS, identityOf } from './source-identity';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../contract/extraction-input';
import { lockTimeoutError } from './lock-blockers';
import { WHILE_READ, requireUnchanged } from './snapshot-changes';
import { lockAccessShare, setLockTimeout } from './table-lock';

/** How the coordinator plans: the ranges (sized by ./range-sizing.ts), and the format they are copied in. */
export interface ExportOptions extends PlanningOptions {
  /** The format the ranges are copied in: binary refuses a column with no binary form (ResolveOptions.format). */
  format?: ExportFormat['format'];
}

/** How long the coordinator waits for its table lock. */
export interface LockingOptions {
  /** @default DEFAULT_LOCK_TIMEOUT_MS */
  lockTimeoutMs: number;
}

/** What partitions need, all read inside the exported snapshot. */
export interface SnapshotPlan {
  /** The pg_export_snapshot() id partitions import. Not a credential; it dies with the transaction. */
  snapshotId: string;
  /** pg_current_snapshot() text of the exporting transaction: every partition must see the same. */
  snapshotText: string;
  /** Digest of the snapshot id (the receipt's sourceToken). */
  sourceToken: string;
  coordinatorPid: number;
  /** The cluster and database the snapshot was exported on: partitions check they read the same. */
  source: SourceIdentity;
  table: ResolvedTable;
  ranges: PartitionRange[];
  /** The rows `auto` planned for (exact up to 10 MiB, else estimated: see range-sizing.ts plannedRows); null for a fixed count. */
  rowCount: number | null;
}

/** The snapshot fields both plans share. */
type ExportedSnapshot = Omit<SnapshotPlan, 'table' | 'ranges' | 'rowCount'>;

/** A set of tables planned inside one exported snapshot, biggest first. */
export interface SnapshotSetPlan extends ExportedSnapshot {
  tables: TablePlan[];
}

export class SnapshotCoordinator<P extends ExportedSnapshot = SnapshotPlan> {
  private constructor(
    private readonly client: ClientBase,
    readonly authority: ExtractionLifecycleAuthority,
    readonly plan: P,
    /** The tables the coordinator locked. */
    private readonly locked: readonly { schema: string; table: string }[],
  ) {}

  /** Opens the exporting transaction on `client` (a fresh session), resolves the table and plans. */
  static async export(
    client: ClientBase,
    request: TableRequest,
    planning: ExportOptions,
    locking: LockingOptions = { lockTimeoutMs: DEFAULT_LOCK_TIMEOUT_MS },
  ): Promise<SnapshotCoordinator> {
    return SnapshotCoordinator.exporting(client, locking, [request], async (snapshot) => {
      const table = await resolveTable(client, request, { readRows: true, format: planning.format });
      await lockAccessShare(client, [table]);
      const { ranges, rowCount } = await planRanges(client, table, planning);
      return { ...snapshot, table, ranges, rowCount };
    });
  }

  /**
   * Opens one exporting transaction for a set of tables: resolves them all inside the snapshot,
   * takes ACCESS SHARE on each (as pg_dump does), and plans each by its size: `partitions` is the
   * most ranges any one table gets (`auto`: {@link AUTO_MAX_PARTITIONS}).
   */
  static async exportSet(
    client: ClientBase,
    selection: TableSelection,
    planning: Pick<ExportOptions, 'partitions' | 'format'>,
    locking: LockingOptions = { lockTimeoutMs: DEFAULT_LOCK_TIMEOUT_MS },
  ): Promise<SnapshotCoordinator<SnapshotSetPlan>> {
    let lockedSet: readonly { schema: string; table: string }[] = [];
    return SnapshotCoordinator.exporting(
      client,
      locking,
      () => lockedSet,
      async (snapshot) => {
        const tables = await resolveTableSet(client, selection, { readRows: true, format: planning.format });
        lockedSet = tables;
        await lockAccessShare(client, tables);
        const sizes = await tableSizes(client, tables);
        const max = planning.partitions === 'auto' ? AUTO_MAX_PARTITIONS : planning.partitions;
        const plans: TablePlan[] = [];
        for (const [i, table] of tables.entries()) {
          const n = partitionsBySize(sizes[i]!, max);
          // One file needs no bounds: small tables cost no planning query at all.
          const ranges: PartitionRange[] = n === 1 ? [{ kind: 'all' }] : (await planRanges(client, table, { partitions: n })).ranges;
          plans.push({ table, bytes: sizes[i]!, ranges });
        }
        return { ...snapshot, tables: biggestFirst(plans) };
      },
    );
  }

  /** BEGIN, export the snapshot, record it on the authority, then `prepare` the plan inside it; ROLLBACK on any failure. */
  private static async exporting<P extends ExportedSnapshot>(
    client: ClientBase,
    locking: LockingOptions,
    lockTargets: readonly { schema: string; table: string }[] | (() => readonly { schema: string; table: string }[]),
    prepare: (snapshot: ExportedSnapshot) => Promise<P>,
  ): Promise<SnapshotCoordinator<P>> {
    const authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.postgresqlServer });
    const locked = () => (typeof lockTargets === 'function' ? lockTargets() : lockTargets);
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    try {
      // Six of the holder's 5 s probes: the backend of a stopped or vanished worker ends instead of pinning the xmin horizon.
      await client.query("SET LOCAL idle_in_transaction_session_timeout = '30s'");
      await setLockTimeout(client, locking.lockTimeoutMs);
      const first = await client.query<{ id: string; snapshot: string; started: string; snapshot_at: string; pid: number } & IdentityRow>(
        `SELECT pg_export_snapshot() AS id, pg_current_snapshot()::text AS snapshot,
                ${utcText('statement_timestamp()')} AS started, ${utcText('clock_timestamp()')} AS snapshot_at,
                pg_backend_pid() AS pid, ${SOURCE_IDENTITY_COLUMNS}`,
      );
      const row = first.rows[0]!;
      const sourceToken = digestSourceToken(row.id);
      authority.acquire(row.started);
      authority.acquireSnapshot(SnapshotAuthority.exportedSnapshot, sourceToken, row.snapshot_at);
      const plan = await prepare({ snapshotId: row.id, snapshotText: row.snapshot, sourceToken, coordinatorPid: row.pid, source: identityOf(row) });
      return new SnapshotCoordinator(client, authority, plan, locked());
    } catch (err) {
      await rollbackAfter(client, err, 'coordinator');
      throw await lockTimeoutError(client, err, locked(), locking.lockTimeoutMs);
    }
  }

  /**
   * SNAPSHOT_LOST unless the locked tables are still as the snapshot saw them: the check the lock
   * made, again once everything is read and before it is claimed (see snapshot-changes.ts requireUnchanged).
   */
  async requireUnchanged(): Promise<void> {
    await requireUnchanged(this.client, this.locked, WHILE_READ);
  }

  /** Proves the session (and so the snapshot) is still alive. */
  async probe(): Promise<void> {
    await this.client.query('SELECT 1');
  }

  /**
   * All partitions are receipted: record completion on the server clock, then commit — or roll
   * back, when what was read did not reach its target (a stream whose target did not commit).
   */
  async complete(evidence: readonly Evidence[], end: 'COMMIT' | 'ROLLBACK' = 'COMMIT'): Promise<ExtractionLifecycleReceipt> {
    const receipt = this.authority.complete(evidence, await serverNow(this.client));
    await this.client.query(end);
    return receipt;
  }

  /** Gives the snapshot up without completing. Never throws. */
  async abort(): Promise<void> {
    await this.client.query('ROLLBACK').catch(() => undefined);
  }
}

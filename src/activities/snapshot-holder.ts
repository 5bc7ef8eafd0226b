/**
 * Snapshot holder activities. They run only on this worker's own task queue, because the read
 * (PostgreSQL: the exported snapshot in this process's coordinator session) lives here:
 * `holdSnapshot` opens the source's read (src/sources), plans and keeps it open (heartbeating,
 * probing it); `awaitSnapshotPlan` hands the plan to the workflow; `completeSnapshot` completes
 * the receipt and closes the read with success; `releaseSnapshot` ends it for an attempt that failed.
 */
import { Context } from '@temporalio/activity';
import { ErrorCode, PgExtractError, errorCodeOf } from '../errors';
import { digestSourceToken } from '../postgres/source-token';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import type { SnapshotSetPlan } from '../postgres/snapshot-coordinator';
import type { ExtractionInput } from '../contract/extraction-input';
import { isTableSet } from '../contract/table-selection';
import { sourceAdapter } from '../sources/adapters';
import { type HeldRead, openPostgresTableSet } from '../sources/postgres-adapter';
import { sourceKindOf } from '../sources/source-kind';
import type { OutputStores } from '../storage/output-stores';
import { tableRequestOf, tableSelectionOf } from './table-request';
import { withFailures } from './failures';
import { heartbeatEvery } from './heartbeats';
import { requireParquetColumns } from '../parquet/column-mapping';
import {
  type CompleteSnapshotRequest,
  type HoldSnapshotRequest,
  type SnapshotPlanView,
  type SnapshotSetPlanView,
  completeSnapshotRequestSchema,
  holdSnapshotRequestSchema,
  parseActivityRequest,
} from '../contract/activity-requests';

/**
 * How often the holder proves its session alive. Partitions notice a dead snapshot at once (their
 * import fails); the probe covers the quiet time before completion. It also keeps the coordinator's
 * transaction under its 30 s idle_in_transaction_session_timeout, which ends it once probes stop.
 */
const PROBE_INTERVAL_MS = 5_000;

/** How long `releaseSnapshot` waits for the hold to close before it reports (the hold still ends). */
const RELEASE_WAIT_MS = 10_000;

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

interface HeldSnapshot {
  plan: Deferred<SnapshotPlanView | SnapshotSetPlanView>;
  /** Ends the hold: its read is completed or is to be rolled back. */
  finished: Deferred<void>;
  /** Resolves once the hold has ended and its read is closed. */
  closed: Deferred<void>;
  /** Set when `holdSnapshot` runs here (awaiting its plan makes the entry too). */
  holding?: true;
  read?: HeldRead;
}

/** The process-local map from attempt key to the source read (PostgreSQL: the coordinator session) holding its snapshot. */
export class SnapshotHolderRegistry {
  readonly #held = new Map<string, HeldSnapshot>();

  entry(key: string): HeldSnapshot {
    let held = this.#held.get(key);
    if (!held) {
      held = { plan: deferred(), finished: deferred(), closed: deferred() };
      this.#held.set(key, held);
    }
    return held;
  }

  get(key: string): HeldSnapshot | undefined {
    return this.#held.get(key);
  }

  delete(key: string): void {
    this.#held.delete(key);
  }

  /** Entries held or awaited now. */
  get size(): number {
    return this.#held.size;
  }
}

/**
 * The registry's key of an attempt: its key with the run asking. A reset run keeps its attempt keys
 * (./workflows/run-key.ts), and the run it replaced may still hold that attempt here for a while.
 */
function heldKey(attemptKey: string): string {
  return `${attemptKey}#${Context.current().info.workflowExecution?.runId ?? ''}`;
}

export interface HolderDeps {
  registry: SnapshotHolderRegistry;
  /** Where the attempt's outputs are checked visible before the receipt completes. */
  stores: OutputStores;
  sourceUrl: (name: string) => string;
}

function lost(): PgExtractError {
  return new PgExtractError(ErrorCode.SNAPSHOT_LOST, 'this worker holds no such snapshot (its holder ended)');
}

/**
 * Opens the source's read of one table or a set (PostgreSQL only) and plans inside it; the view is
 * what the workflow gets, `tables` each planned table's name and columns.
 */
async function openAndPlan(
  url: string,
  attemptKey: string,
  input: ExtractionInput,
  signal: AbortSignal,
): Promise<{ read: HeldRead; view: SnapshotPlanView | SnapshotSetPlanView; tables: { name: string; columns: readonly { name: string }[] }[] }> {
  const options = { partitions: input.partitions, lockTimeoutMs: input.timeouts.lockTimeoutMs, format: input.format, signal };
  if (isTableSet(input)) {
    if (sourceKindOf(url) !== 'postgresql') {
      throw new PgExtractError(ErrorCode.SOURCE_URL_UNSUPPORTED, 'many tables at one snapshot need a PostgreSQL source (exported snapshots)', {
        field: 'source',
      });
    }
    const read = await openPostgresTableSet(url, tableSelectionOf(input), options);
    const tables = read.plan.tables.map(({ table }) => ({ name: `${table.schema}.${table.table}`, columns: table.columns }));
    return { read, view: setPlanView(attemptKey, read.plan), tables };
  }
  const read = await sourceAdapter(url).open(tableRequestOf(input), options);
  const { handle, plan } = read;
  return {
    read,
    view: {
      attemptKey,
      snapshotId: handle.snapshotId,
      snapshotDigest: handle.snapshotDigest,
      coordinatorPid: plan.coordinatorPid,
      ...(handle.source ? { source: handle.source } : {}),
      table: handle.table,
      columns: plan.table.columns,
      primaryKey: plan.table.primaryKey,
      key: handle.key,
      ranges: plan.ranges,
      rowCount: plan.rowCount,
    },
    tables: [{ name: `${handle.table.schema}.${handle.table.table}`, columns: plan.table.columns }],
  };
}

/** Waits (heartbeating) for the holder of `attemptKey` to publish its plan. */
function awaitPlan(registry: SnapshotHolderRegistry, attemptKey: string): Promise<SnapshotPlanView | SnapshotSetPlanView> {
  return withFailures(async () => {
    const stopBeats = heartbeatEvery(() => ({ attemptKey }));
    const key = heldKey(attemptKey);
    const held = registry.entry(key);
    try {
      return await Promise.race([held.plan.promise, Context.current().cancelled]);
    } finally {
      stopBeats();
      // An entry no hold took (the hold had ended, or never started here) is this wait's to drop.
      if (!held.holding && registry.get(key) === held) registry.delete(key);
    }
  });
}

/**
 * What the workflow needs of a set's plan: names, split keys, sizes, ranges. No columns: each read
 * takes every column inside the snapshot, and the set's data package lists them for the loader.
 */
function setPlanView(attemptKey: string, plan: SnapshotSetPlan): SnapshotSetPlanView {
  return {
    attemptKey,
    snapshotId: plan.snapshotId,
    snapshotDigest: digestSourceToken(plan.snapshotText),
    coordinatorPid: plan.coordinatorPid,
    source: plan.source,
    tables: plan.tables.map(({ table, bytes, ranges }) => ({
      table: { schema: table.schema, table: table.table },
      key: table.key,
      bytes,
      ranges,
    })),
  };
}

export function createHolderActivities({ registry, sourceUrl, stores }: HolderDeps) {
  return {
    async holdSnapshot(raw: HoldSnapshotRequest): Promise<{ released: true }> {
      return withFailures(async () => {
        const { attemptKey, input } = parseActivityRequest(holdSnapshotRequestSchema, raw);
        const url = sourceUrl(input.source);
        const ctx = Context.current();
        const key = heldKey(attemptKey);
        const held = registry.entry(key);
        held.holding = true;
        const stopBeats = heartbeatEvery(() => ({ attemptKey }));
        // A cancel or a release stops the planning too (its wait for a lock may be long), not only the hold after it.
        const released = new AbortController();
        void held.finished.promise.then(() => released.abort());
        try {
          const opened = await openAndPlan(url, attemptKey, input, AbortSignal.any([ctx.cancellationSignal, released.signal]));
          held.read = opened.read;
          if (input.format === 'parquet') for (const t of opened.tables) requireParquetColumns(t.name, t.columns);
          held.plan.resolve(opened.view);
          for (let done = false; !done;) {
            done = await Promise.race([
              held.finished.promise.then(() => true),
              ctx.cancelled.then(() => true),
              new Promise<false>((res) => setTimeout(res, PROBE_INTERVAL_MS, false)),
            ]);
            if (!done) await opened.read.probe();
          }
          return { released: true as const };
        } catch (err) {
          held.plan.reject(err);
          // Released while planning: the attempt was given up, and its hold ends as a released one does.
          if (released.signal.aborted && !ctx.cancellationSignal.aborted) return { released: true as const };
          throw err;
        } finally {
          stopBeats();
          registry.delete(key);
          // Ends what is still open (a completed read has nothing left): rollback and close.
          try {
            await held.read?.close('abort');
          } finally {
            held.closed.resolve();
          }
        }
      });
    },

    async awaitSnapshotPlan(attemptKey: string): Promise<SnapshotPlanView> {
      return (await awaitPlan(registry, attemptKey)) as SnapshotPlanView;
    },

    /** The plan of a set of tables (a run of `tables` or `schema`). */
    async awaitSnapshotSetPlan(attemptKey: string): Promise<SnapshotSetPlanView> {
      return (await awaitPlan(registry, attemptKey)) as SnapshotSetPlanView;
    },

    /**
     * Ends the hold of an attempt that will not complete (a copy failed, the run was cancelled) now,
     * where a cancellation reaches the hold only with its next heartbeat: its read rolls back, so the
     * snapshot's transaction and its table locks end with the attempt. Resolves once the read is
     * closed, or after RELEASE_WAIT_MS (a close may wait on an unreachable source); a hold still
     * planning stops (its running statement is cancelled); a hold that has already ended, or never
     * started here, has nothing to release.
     */
    async releaseSnapshot(attemptKey: string): Promise<void> {
      const held = registry.get(heldKey(attemptKey));
      if (!held?.holding) return;
      held.finished.resolve();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([held.closed.promise, new Promise((resolve) => (timer = setTimeout(resolve, RELEASE_WAIT_MS)))]);
      clearTimeout(timer);
    },

    async completeSnapshot(raw: CompleteSnapshotRequest): Promise<ExtractionLifecycleReceipt> {
      // Its stub has the holder's heartbeat timeout, and a visibility check of thousands of objects can outlast it.
      const stopHeartbeat = heartbeatEvery(() => ({ completing: true }));
      return withFailures(async () => {
        const req = parseActivityRequest(completeSnapshotRequestSchema, raw);
        const held = registry.get(heldKey(req.attemptKey));
        if (!held?.read) throw lost();
        try {
          // The manifest lists only what one reader can open: every output must be visible here.
          await stores.checkVisible(req.evidence);
        } catch (err) {
          held.finished.resolve();
          throw err;
        }
        try {
          return await held.read.close('success', req.evidence, req.rangesRead);
        } catch (err) {
          // Evidence short of the plan is the caller's mistake, not a lost snapshot a fresh attempt would cure;
          // a table changed while it was read says so itself.
          if (errorCodeOf(err) === ErrorCode.EXTRACTION_INCOMPLETE || errorCodeOf(err) === ErrorCode.SNAPSHOT_LOST) throw err;
          throw new PgExtractError(ErrorCode.SNAPSHOT_LOST, 'the coordinator session failed while completing', { cause: err });
        } finally {
          held.finished.resolve();
        }
      }).finally(stopHeartbeat);
    },
  };
}

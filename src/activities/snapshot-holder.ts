/**
 * Snapshot holder activities. They run only on this worker's own task queue, because the
 * exported snapshot lives in this process's coordinator session: `holdSnapshot` exports, plans
 * and keeps the transaction open (heartbeating, probing the session); `awaitSnapshotPlan` hands
 * the plan to the workflow; `completeSnapshot` completes the receipt and commits.
 */
import { Context } from '@temporalio/activity';
import { ErrorCode, PgExtractError } from '../errors';
import { digestSourceToken } from '../postgres/source-token';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import { sourceColumns } from '../postgres/catalog';
import { SnapshotCoordinator } from '../postgres/snapshot-coordinator';
import { closeSession, openSession } from '../postgres/session';
import type { OutputStores } from '../storage/output-stores';
import { tableRequestOf } from './table-request';
import { withFailures } from './failures';
import { heartbeatEvery, heartbeatInterval } from './heartbeats';
import { type CompleteSnapshotRequest, type HoldSnapshotRequest, type SnapshotPlanView, parseNamed } from './requests';

/**
 * How often the holder proves its session alive. Partitions notice a dead snapshot at once (their
 * import fails); the probe covers the quiet time before completion. It also keeps the coordinator's
 * transaction under its 30 s idle_in_transaction_session_timeout, which ends it once probes stop.
 */
const PROBE_INTERVAL_MS = 5_000;

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
  plan: Deferred<SnapshotPlanView>;
  finished: Deferred<void>;
  coordinator?: SnapshotCoordinator;
}

/** The process-local map from attempt key to the coordinator session holding its snapshot. */
export class SnapshotHolderRegistry {
  readonly #held = new Map<string, HeldSnapshot>();

  entry(key: string): HeldSnapshot {
    let held = this.#held.get(key);
    if (!held) {
      held = { plan: deferred(), finished: deferred() };
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

export function createHolderActivities({ registry, sourceUrl, stores }: HolderDeps) {
  return {
    async holdSnapshot(raw: HoldSnapshotRequest): Promise<{ released: true }> {
      return withFailures(async () => {
        const { attemptKey, input } = parseNamed(raw);
        const url = sourceUrl(input.source);
        const ctx = Context.current();
        const held = registry.entry(attemptKey);
        const client = await openSession(url, 'coordinator');
        const stopBeats = heartbeatEvery(heartbeatInterval(), () => ({ attemptKey }));
        try {
          const coordinator = await SnapshotCoordinator.export(client, tableRequestOf(input), { partitions: input.partitions }, {
            lockTimeoutMs: input.timeouts.lockTimeoutMs,
          });
          held.coordinator = coordinator;
          const { plan } = coordinator;
          held.plan.resolve({
            attemptKey,
            snapshotId: plan.snapshotId,
            snapshotDigest: digestSourceToken(plan.snapshotText),
            coordinatorPid: plan.coordinatorPid,
            source: plan.source,
            table: { schema: plan.table.schema, table: plan.table.table, columns: plan.table.columns.map((c) => c.name) },
            columns: sourceColumns(plan.table),
            primaryKey: plan.table.primaryKey,
            key: plan.table.key,
            ranges: plan.ranges,
            rowCount: plan.rowCount,
          });
          for (let done = false; !done; ) {
            done = await Promise.race([
              held.finished.promise.then(() => true),
              ctx.cancelled.then(() => true),
              new Promise<false>((res) => setTimeout(res, PROBE_INTERVAL_MS, false)),
            ]);
            if (!done) await coordinator.probe();
          }
          return { released: true as const };
        } catch (err) {
          held.plan.reject(err);
          await held.coordinator?.abort();
          throw err;
        } finally {
          stopBeats();
          registry.delete(attemptKey);
          await closeSession(client);
        }
      });
    },

    async awaitSnapshotPlan(attemptKey: string): Promise<SnapshotPlanView> {
      return withFailures(async () => {
        const stopBeats = heartbeatEvery(heartbeatInterval(), () => ({ attemptKey }));
        try {
          return await Promise.race([registry.entry(attemptKey).plan.promise, Context.current().cancelled]);
        } finally {
          stopBeats();
        }
      });
    },

    async completeSnapshot(raw: CompleteSnapshotRequest): Promise<ExtractionLifecycleReceipt> {
      return withFailures(async () => {
        const held = registry.get(raw.attemptKey);
        if (!held?.coordinator) throw lost();
        try {
          // The manifest lists only what one reader can open: every output must be visible here.
          await Promise.all(raw.evidence.map((f) => stores.of(f.name).checkVisible(f.name, f.bytes)));
        } catch (err) {
          held.finished.resolve();
          throw err;
        }
        try {
          return await held.coordinator.complete(raw.evidence);
        } catch (err) {
          throw new PgExtractError(ErrorCode.SNAPSHOT_LOST, 'the coordinator session failed while completing', { cause: err });
        } finally {
          held.finished.resolve();
        }
      });
    },
  };
}

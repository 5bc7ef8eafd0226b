/**
 * The built-in target owner's four loads, each ending in the target owner's report: one table's
 * files COPYed in behind the commit fence (loadFiles), a set's files into their mapped tables in
 * one transaction behind one fence (loadFileSet), (source and target one database) one
 * `INSERT … SELECT` (loadBySelect), or each partition's COPY TO streamed into a COPY FROM on the
 * target inside one exported snapshot (loadByStream); and releaseStreamStaging, which drops what a
 * stream left on the target. An ambiguous COMMIT is reconciled by its transaction's fate:
 * committed → committed, aborted → failed, still in progress after the wait or unreachable →
 * unknown; a fence holding another intent is unknown. Other failures are thrown; whether they are
 * definite is the caller's decision.
 */
import type { ExportFormat } from '../contract/formats';
import type { LoadReport } from '../contract/load-report';
import { ErrorCode, PgExtractError, errorCodeOf } from '../errors';
import type { ExtractionLifecycleReceipt, RowEvidence } from '../lifecycle/receipt';
import { type TableRequest, resolveTable } from '../postgres/catalog';
import { closeSession, openSession } from '../postgres/session';
import { SnapshotCoordinator } from '../postgres/snapshot-coordinator';
import { digestSourceToken } from '../postgres/source-token';
import { quoteQualified } from '../postgres/sql';
import { CommitUnacknowledged, type LoadFile, type LoadRequest, type LoadResult, fencedTransaction, loadIntoTarget, reconcileCommit } from './loader';
import { assertSameDatabase, assertSourceMayRead, onTargetSession } from './session';
import { insertSelectIntoStaging } from './select-into-staging';
import { filesIntentDigest, internalIntentDigest, setIntentDigest, streamIntentDigest } from './load-identity';
import { loadSetIntoTarget } from './set-loader';
import { dropStreamStaging, streamIntoTarget } from './stream-load';
import { moveIntoTarget } from './table-fill';
import { sequencesPastRows } from './sequences';

/** Runs a fenced load and turns its end into the target owner's report (see the file comment). */
async function report(operationId: string, url: string, digest: string, load: () => Promise<LoadResult>): Promise<LoadReport> {
  try {
    const result = await load();
    return { outcome: 'committed', operationId, reason: null, rows: result.rows };
  } catch (err) {
    if (err instanceof CommitUnacknowledged) {
      const verdict = await reconcileCommit(() => openSession(url, 'target'), { operationId, digest, xid: err.xid });
      const outcome = verdict === 'committed' ? 'committed' : verdict === 'not_committed' ? 'failed' : 'unknown';
      if (verdict === 'committed') return { outcome, operationId, reason: err.code, rows: err.rows };
      const said = verdict === 'not_committed' ? 'the target rolled the transaction back' : 'the target could not say whether it committed';
      return { outcome, operationId, reason: err.code, rows: null, message: `${err.message}; ${said}` };
    }
    if (errorCodeOf(err) === ErrorCode.TARGET_FENCE_CONFLICT)
      return { outcome: 'unknown', operationId, reason: ErrorCode.TARGET_FENCE_CONFLICT, rows: null, message: (err as Error).message };
    throw err;
  }
}

/** A manifest's files, loaded into `schema.table` as the target's catalog names it. */
export type FilesLoad = Omit<LoadRequest, 'schema' | 'table'> & { destination: TableRequest };

export async function loadFiles(url: string, { destination, ...load }: FilesLoad, signal: AbortSignal, onBytes: (bytes: number) => void): Promise<LoadReport> {
  return onTargetSession(url, signal, async (client) => {
    const resolved = await resolveTable(client, destination);
    const request = { ...load, schema: resolved.schema, table: resolved.table };
    return report(request.operationId, url, filesIntentDigest(request), () => loadIntoTarget(client, request, { signal, onBytes }));
  });
}

/** A set's files, grouped by source table (manifest order), each group with the target table it maps to. */
export interface FileSetLoad {
  tables: { source: string; target: TableRequest; files: LoadFile[]; columns?: string[]; columnTypes?: string[] }[];
  format: ExportFormat;
  mode: 'append' | 'replace';
  operationId: string;
}

/** Every table of a set into its mapped target table, in one target transaction behind one fence (see set-loader.ts). */
export async function loadFileSet(url: string, { tables, ...load }: FileSetLoad, signal: AbortSignal, onBytes: (bytes: number) => void): Promise<LoadReport> {
  return onTargetSession(url, signal, async (client) => {
    const resolvedTables = [];
    const seen = new Map<string, string>();
    for (const { source, target, ...fill } of tables) {
      const resolved = await resolveTable(client, target);
      // By its parts: `"x.y".z` and `x."y.z"` are two tables.
      const key = JSON.stringify([resolved.schema, resolved.table]);
      if (seen.has(key))
        throw new PgExtractError(ErrorCode.TARGET_MAPPING_INVALID, `${seen.get(key)} and ${source} both map onto ${resolved.schema}.${resolved.table}`, {
          field: 'target',
        });
      seen.set(key, source);
      resolvedTables.push({ schema: resolved.schema, table: resolved.table, ...fill });
    }
    const request = { ...load, tables: resolvedTables };
    return report(request.operationId, url, setIntentDigest(request), () => loadSetIntoTarget(client, request, { signal, onBytes }));
  });
}

/** An internal query: `source` read and written into `destination` inside the one database. */
export interface InternalLoad {
  sourceUrl: string;
  source: TableRequest;
  destination: TableRequest;
  mode: 'append' | 'replace';
  operationId: string;
}

/**
 * The target session runs `INSERT INTO staging … SELECT` and moves it into the target behind the
 * fence. The receipt is that statement's window; it is null when the fence answered a retry (no
 * read happened).
 */
export async function loadBySelect(
  url: string,
  { sourceUrl, source, destination, mode, operationId }: InternalLoad,
  signal: AbortSignal,
): Promise<{ report: LoadReport; receipt: ExtractionLifecycleReceipt | null }> {
  return onTargetSession(url, signal, async (client) => {
    await assertSameDatabase(sourceUrl, client);
    const from = await resolveTable(client, source, { readRows: true });
    await assertSourceMayRead(sourceUrl, from);
    const into = await resolveTable(client, destination);
    const digest = internalIntentDigest(from, into, mode);
    let receipt: ExtractionLifecycleReceipt | null = null;
    const result = await report(operationId, url, digest, () =>
      fencedTransaction(
        client,
        operationId,
        digest,
        `${into.schema}.${into.table}`,
        async () => {
          const staged = await insertSelectIntoStaging(client, from);
          receipt = staged.extractionReceipt;
          // The staging table's columns are the source's, named as there: they move by name.
          const columns = from.columns.map((c) => c.name);
          await moveIntoTarget(client, quoteQualified(staged.artifact.schema, staged.artifact.name), into, mode, columns);
          await sequencesPastRows(client, [into]);
          return staged.artifact.rows;
        },
        signal,
      ),
    );
    return { report: result, receipt };
  });
}

/** A streamed load: the source table, its planning and where it goes. */
export interface StreamLoad {
  sourceUrl: string;
  source: TableRequest;
  partitions: number | 'auto';
  format: 'csv' | 'binary' | 'parquet';
  lockTimeoutMs: number;
  /** Snapshots taken at most while a table changes between the snapshot and its lock (the input's `maxSnapshotAttempts`). */
  snapshotAttempts: number;
  destination: TableRequest;
  mode: 'append' | 'replace';
  operationId: string;
}

/**
 * A stream's report, its receipt and its snapshot. The receipt is null when the stream did not read
 * every range, or the fence answered (the target holds another attempt's read); a read the target
 * did not take (a COMMIT reconciled as rolled back, or unknown) completes with ROLLBACK.
 */
export interface StreamLoadReport {
  report: LoadReport;
  receipt: ExtractionLifecycleReceipt | null;
  snapshotDigest: string | null;
}

/** How often the stream's coordinator proves its session alive (its idle timeout is 30 s), as the snapshot holder does. */
const COORDINATOR_PROBE_MS = 5000;

/**
 * Streaming PG → PG: a coordinator session exports the snapshot every range imports, and its
 * REPEATABLE READ transaction stays open until the target's outcome is known: committed →
 * COMMIT, anything else → ROLLBACK (a retried or failed load closes the session, which rolls back).
 */
export async function loadByStream(url: string, load: StreamLoad, signal: AbortSignal, onBytes: (bytes: number) => void): Promise<StreamLoadReport> {
  return onTargetSession(url, signal, async (client) => {
    const target = await resolveTable(client, load.destination);
    const session = await openSession(load.sourceUrl, 'coordinator', { signal });
    let probing: NodeJS.Timeout | undefined;
    try {
      const { lockTimeoutMs, operationId } = load;
      const coordinator = await unchangedSnapshot(
        () => SnapshotCoordinator.export(session, load.source, { partitions: load.partitions, format: load.format }, { lockTimeoutMs }),
        load.snapshotAttempts,
      );
      probing = setInterval(() => void coordinator.probe().catch(() => undefined), COORDINATOR_PROBE_MS);
      const request = { plan: coordinator.plan, schema: target.schema, table: target.table, mode: load.mode, format: load.format, lockTimeoutMs, operationId };
      // Each range's sessions stop with the load too: a range queued for its table lock (behind a migration that asked
      // after the coordinator locked) stayed queued after the run had ended, until the server noticed the closed socket.
      const sessions = {
        source: () => openSession(load.sourceUrl, 'stream', { signal }),
        target: () => openSession(url, 'target', { signal }),
        close: closeSession,
      };
      let evidence = null as RowEvidence[] | null;
      // Checked before the target commits: what the stream read must be the snapshot's.
      const onStreamed = async (streamed: RowEvidence[]): Promise<void> => {
        await coordinator.requireUnchanged();
        evidence = streamed;
      };
      const result = await report(operationId, url, streamIntentDigest(request), async () => {
        const loaded = await streamIntoTarget(client, sessions, request, { signal, onBytes, onStreamed });
        // An attempt committed while this one streamed: the target holds that attempt's read, not this one's.
        if (loaded.status === 'already_committed') evidence = null;
        return loaded;
      });
      clearInterval(probing);
      const end = result.outcome === 'committed' ? 'COMMIT' : 'ROLLBACK';
      const receipt = evidence ? await coordinator.complete(evidence, end) : (await coordinator.abort(), null);
      // A read the target did not take from this try (the fence answered) is no snapshot of the run's.
      return { report: result, receipt, snapshotDigest: evidence ? digestSourceToken(coordinator.plan.snapshotText) : null };
    } finally {
      clearInterval(probing);
      await closeSession(session);
    }
  });
}

/**
 * `exportOnce`'s coordinator, taken again while it fails with SNAPSHOT_LOST (the table changed
 * between its snapshot and its lock; the failed export rolled its transaction back), at most
 * `attempts` times: nothing has been read or written yet, so a fresh snapshot is all a retry needs.
 */
async function unchangedSnapshot<T>(exportOnce: () => Promise<T>, attempts: number): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await exportOnce();
    } catch (err) {
      if (attempt >= attempts || errorCodeOf(err) !== ErrorCode.SNAPSHOT_LOST) throw err;
    }
  }
}

/** Drops what a stream left on the target under `operationId` (a vanished worker's, or a target unreachable at the time). */
export async function releaseStreamStaging(url: string, destination: TableRequest, operationId: string): Promise<void> {
  const client = await openSession(url, 'target');
  try {
    const resolved = await resolveTable(client, destination);
    await dropStreamStaging(client, resolved.schema, operationId);
  } finally {
    await closeSession(client);
  }
}

/**
 * The built-in target owner's activities: parse the request, run the load (src/target/) while
 * heartbeating, and map its end. Definite failures (bad data for the target, a bad target
 * definition, an unconfigured target) are reported `failed`; failures a retry may cure (a dropped
 * connection) are thrown and retried, and the fence makes a retried load a no-op once one attempt
 * committed. A cancelled load cancels its target statement and reports once the transaction has ended.
 */
import { createHash } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { Context } from '@temporalio/activity';
import type { z } from 'zod';
import { parseTableName } from '../contract/identifiers';
import { LOAD_MESSAGE_LIMIT, type LoadReport } from '../contract/load-report';
import { ErrorCode, PgExtractError, errorCodeOf } from '../errors';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import { targetTableOf } from '../contract/target-mapping';
import { type DataPackage, type PackagedColumns, packagedColumns } from '../readers/data-package';
import type { OutputStores } from '../storage/output-stores';
import { type StreamLoadReport, loadBySelect, loadByStream, loadFileSet, loadFiles, releaseStreamStaging } from '../target/loads';
import { fenceRows } from '../target/loader';
import { onTargetSession } from '../target/session';
import { failureTypeOf, withFailures } from './failures';
import { heartbeatEvery, heartbeating } from './heartbeats';
import { definiteLoadFailure, loadFailureMessage } from './load-failures';
import { parseActivityRequest } from '../contract/activity-requests';
import {
  type LoadFenceRequest,
  type LoadFenceVerdict,
  type LoadTargetRequest,
  type LoadTargetSetRequest,
  type LoadWithoutFilesRequest,
  type ReleaseStreamStagingRequest,
  loadFenceRequestSchema,
  loadTargetRequestSchema,
  loadTargetSetRequestSchema,
  loadWithoutFilesRequestSchema,
  releaseStreamStagingRequestSchema,
} from '../contract/load-requests';
import { tableRequestOf } from './table-request';

/**
 * The request's files per source table (in the manifest's order), each table with its target and
 * its columns: from the run's data package (`packaged`, with their types), or as a load scheduled
 * by an earlier release named them (or did not: then by position).
 */
function setTables(
  req: LoadTargetSetRequest,
  packaged: Map<string, PackagedColumns> | null,
): { source: string; target: { schema: string; table: string }; files: LoadTargetSetRequest['files']; columns?: string[]; columnTypes?: string[] }[] {
  const bySource = new Map<string, LoadTargetSetRequest['files']>();
  for (const f of req.files) {
    const files = bySource.get(f.table) ?? [];
    files.push(f);
    bySource.set(f.table, files);
  }
  return [...bySource].map(([source, files]) => {
    const named = req.columns?.[source];
    const loaded = packaged ? packaged.get(source) : named ? { columns: named } : {};
    if (!loaded) throw new PgExtractError(ErrorCode.INPUT_INVALID, `the run's data package lists no table ${source}`, { field: 'dataPackage' });
    return { source, target: targetTableOf(req.target, source), files, ...loaded };
  });
}

/** A load without files (internal query, stream): its request parsed, the run's target checked to load `via` this way. */
function loadWithoutFiles(raw: unknown, via: 'internal' | 'stream') {
  const { input, operationId } = parseActivityRequest(loadWithoutFilesRequestSchema, raw);
  const target = input.target;
  if (target?.via !== via) throw new PgExtractError(ErrorCode.INPUT_INVALID, `this load needs target.via = ${via}`, { field: 'target.via' });
  return { input, operationId, mode: target.mode, name: target.name, destination: parseTableName(target.table!, 'target.table') };
}

/**
 * Runs a load activity's body while heartbeating its progress (a dead loader worker is noticed by
 * the heartbeat timeout; a cancellation arrives with a heartbeat's response). A definite failure
 * anywhere in it, configuration included, becomes a `failed` report, so the run aborts at once;
 * other failures are thrown and retried. Either, when it ends a retried load, first asks whether
 * an earlier attempt committed (see {@link committedEarlier}).
 */
async function reporting<T>(
  operationId: string,
  targetUrl: () => string,
  failed: (report: LoadReport) => T,
  body: (progress: { bytes: number }) => Promise<T>,
): Promise<T> {
  const progress = { bytes: 0 };
  const stopHeartbeat = heartbeatEvery(() => progress);
  try {
    return await body(progress);
  } catch (err) {
    const reason = definiteLoadFailure(err);
    const { info, cancellationSignal } = Context.current();
    const lastTry = info.attempt >= (info.retryPolicy?.maximumAttempts || Number.POSITIVE_INFINITY);
    if (cancellationSignal.aborted || (reason === null && !lastTry)) throw err;
    const earlier = await committedEarlier(operationId, targetUrl);
    if (earlier === 'none') {
      if (reason === null) throw err;
      return failed({ outcome: 'failed', operationId, reason, rows: null, message: loadFailureMessage(err) });
    }
    if (earlier !== 'unreadable') return failed({ outcome: 'committed', operationId, reason: null, rows: earlier.rows });
    const message = `an earlier attempt of this load may have committed, and the fence could not be read: ${loadFailureMessage(err)}`;
    const code = reason ?? errorCodeOf(err) ?? failureTypeOf(err as { name?: string; code?: unknown });
    return failed({ outcome: 'unknown', operationId, reason: code, rows: null, message: message.slice(0, LOAD_MESSAGE_LIMIT) });
  } finally {
    stopHeartbeat();
  }
}

/**
 * The rows an earlier attempt of this load committed: one may have, and vanished before it
 * reported, while this one failed before it reached the fence (a table dropped since, a worker
 * without the target's URL, the target unreachable through every retry). Its fence row says so;
 * none on a first attempt; unreadable when the fence cannot be read.
 */
async function committedEarlier(operationId: string, targetUrl: () => string): Promise<FenceRead> {
  const { info, cancellationSignal } = Context.current();
  if (info.attempt <= 1) return 'none';
  return readFence(operationId, targetUrl, cancellationSignal);
}

/** What a load's fence says: the rows an attempt committed, none committed, or nothing (it cannot be read). */
type FenceRead = { rows: number } | 'none' | 'unreadable';

/** The fence's row for `operationId` (see loader.ts `fenceRows`). */
function readFence(operationId: string, targetUrl: () => string, signal: AbortSignal): Promise<FenceRead> {
  // targetUrl() throws on a worker without the target's URL: that too leaves the fence unread.
  return Promise.resolve()
    .then(() => onTargetSession(targetUrl(), signal, (client) => fenceRows(client, operationId)))
    .then(
      (rows): FenceRead => (rows === null ? 'none' : { rows }),
      (): FenceRead => 'unreadable',
    );
}

export function createLoadActivities({
  targetUrl,
  sourceUrl,
  stores,
}: {
  targetUrl: (name: string) => string;
  sourceUrl: (name: string) => string;
  stores: OutputStores;
}) {
  /** The manifest's files, each opened from the store it lives in. */
  const readable = <F extends { path: string }>(files: F[]) => files.map((f) => ({ ...f, open: () => stores.of(f.path).read(f.path) }));

  /** The run's data package from its store, checked against its manifest entry's sha256 as every loaded file is. */
  const storedPackage = async ({ path, sha256 }: { path: string; sha256: string }): Promise<DataPackage> => {
    const body = await buffer(await stores.of(path).read(path));
    if (createHash('sha256').update(body).digest('hex') !== sha256) {
      throw new PgExtractError(ErrorCode.TARGET_CHECKSUM_MISMATCH, `${path} does not match its manifest entry (sha256)`);
    }
    return JSON.parse(body.toString('utf8')) as DataPackage;
  };

  /** Parses a load of the manifest's files and runs it while reporting: `run` gets the request, the target's URL and a byte counter. */
  const loadingFiles = <R extends { operationId: string; target: { name: string } }>(
    schema: z.ZodType<R>,
    raw: unknown,
    run: (req: R, url: string, onBytes: (bytes: number) => void) => Promise<LoadReport>,
  ): Promise<LoadReport> =>
    withFailures(async () => {
      const req = parseActivityRequest(schema, raw);
      return reporting(
        req.operationId,
        () => targetUrl(req.target.name),
        (report) => report,
        (progress) => run(req, targetUrl(req.target.name), (bytes) => (progress.bytes = bytes)),
      );
    });

  return {
    /**
     * What the fence says of a load that ended without a report (cancelled, or its retries spent):
     * an attempt may have committed and vanished, or committed as the cancellation came.
     */
    async loadFenceVerdict(raw: LoadFenceRequest): Promise<LoadFenceVerdict> {
      return withFailures(async () => {
        const { target, operationId } = parseActivityRequest(loadFenceRequestSchema, raw);
        const read = await readFence(operationId, () => targetUrl(target), Context.current().cancellationSignal);
        return read === 'unreadable' ? read : read === 'none' ? 'not_committed' : 'committed';
      });
    },

    /** Internal query: source and target are one database (see {@link loadBySelect}). */
    async loadInternal(raw: LoadWithoutFilesRequest): Promise<{ report: LoadReport; receipt: ExtractionLifecycleReceipt | null }> {
      return withFailures(async () => {
        const { input, operationId, mode, name, destination } = loadWithoutFiles(raw, 'internal');
        return reporting(
          operationId,
          () => targetUrl(name),
          (report) => ({ report, receipt: null }),
          async () =>
            loadBySelect(
              targetUrl(name),
              { sourceUrl: sourceUrl(input.source), source: tableRequestOf(input), destination, mode, operationId },
              Context.current().cancellationSignal,
            ),
        );
      });
    },

    /** Streaming PG → PG (see {@link loadByStream}): no files; the source snapshot ends with the target's outcome. */
    async loadStream(raw: LoadWithoutFilesRequest): Promise<StreamLoadReport> {
      return withFailures(async () => {
        const { input, operationId, mode, name, destination } = loadWithoutFiles(raw, 'stream');
        const load = {
          sourceUrl: sourceUrl(input.source),
          source: tableRequestOf(input),
          partitions: input.partitions,
          format: input.format,
          lockTimeoutMs: input.timeouts.lockTimeoutMs,
          snapshotAttempts: input.maxSnapshotAttempts,
          destination,
          mode,
          operationId,
        };
        return reporting(
          operationId,
          () => targetUrl(name),
          (report): StreamLoadReport => ({ report, receipt: null, snapshotDigest: null }),
          async (progress) => loadByStream(targetUrl(name), load, Context.current().cancellationSignal, (bytes) => (progress.bytes = bytes)),
        );
      });
    },

    /** Drops what a stream left on the target under `operationId` (a vanished worker's, or a target unreachable at the time). */
    async releaseStreamStaging(raw: ReleaseStreamStagingRequest): Promise<void> {
      return withFailures(async () => {
        const { target, operationId } = parseActivityRequest(releaseStreamStagingRequestSchema, raw);
        return heartbeating(() => releaseStreamStaging(targetUrl(target.name), parseTableName(target.table, 'target.table'), operationId));
      });
    },

    /** A run of several tables: every table into its mapped target table, in one transaction behind the fence. */
    async loadTargetSet(raw: LoadTargetSetRequest): Promise<LoadReport> {
      return loadingFiles(loadTargetSetRequestSchema, raw, async (req, url, onBytes) => {
        const packaged = req.dataPackage ? packagedColumns(await storedPackage(req.dataPackage)) : null;
        const tables = setTables(req, packaged).map((t) => ({ ...t, files: readable(t.files) }));
        return loadFileSet(
          url,
          { tables, format: req.format, mode: req.target.mode, operationId: req.operationId },
          Context.current().cancellationSignal,
          onBytes,
        );
      });
    },

    async loadTarget(raw: LoadTargetRequest): Promise<LoadReport> {
      return loadingFiles(loadTargetRequestSchema, raw, ({ target, files, format, operationId, ...columns }, url, onBytes) => {
        const destination = parseTableName(target.table, 'target.table');
        // `columns` and `columnTypes` as the request gives them: a load scheduled by an earlier release names no columns
        // (it loads by position), and only binary files come with types.
        const load = { files: readable(files), format, destination, mode: target.mode, operationId, ...columns };
        return loadFiles(url, load, Context.current().cancellationSignal, onBytes);
      });
    },
  };
}

/**
 * The built-in target owner's activities: parse the request, run the load (src/target/) while
 * heartbeating, and map its end. Definite failures (bad data for the target, a bad target
 * definition, an unconfigured target) are reported `failed`; failures a retry may cure (a dropped
 * connection) are thrown and retried, and the fence makes a retried load a no-op once one attempt
 * committed. A cancelled load cancels its target statement and reports once the transaction has ended.
 */
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import { parseTableName } from '../contract/identifiers';
import type { ExtractionInput } from '../contract/extraction-input';
import { FILE_COMPRESSIONS, type FileCompression } from '../contract/format-options';
import type { LoadReport } from '../contract/load-report';
import { ErrorCode, PgExtractError } from '../errors';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import { targetTableOf } from '../contract/target-mapping';
import type { OutputStores } from '../storage/output-stores';
import { type StreamLoadReport, loadBySelect, loadByStream, loadFileSet, loadFiles, releaseStreamStaging } from '../target/loads';
import { withFailures } from './failures';
import { heartbeatEvery, heartbeatInterval } from './heartbeats';
import { definiteLoadFailure } from './load-failures';
import { parseNamed } from './requests';
import { tableRequestOf } from './table-request';

export interface LoadTargetRequest {
  target: { name: string; table: string; mode: 'append' | 'replace' };
  files: { path: string; rows: number; sha256: string }[];
  /** Parquet never reaches a load (the input refuses it); the schema below rejects it here too. */
  format: { format: 'csv' | 'binary' | 'parquet'; header: boolean; gzip: boolean; compression?: FileCompression };
  operationId: string;
}

const requestSchema = z.strictObject({
  target: z.strictObject({ name: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,62}$/), table: z.string().min(1).max(300), mode: z.enum(['append', 'replace']) }),
  files: z
    .array(z.strictObject({ path: z.string().min(1).max(4096), rows: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/) }))
    .max(10_000),
  format: z.strictObject({ format: z.enum(['csv', 'binary']), header: z.boolean(), gzip: z.boolean(), compression: z.enum(FILE_COMPRESSIONS).optional() }),
  operationId: z.string().min(1).max(300),
});

export interface LoadTargetSetRequest {
  /** Where each table loads: `schema` (the same name there) or `tables` (an explicit map); see target-mapping.ts. */
  target: { name: string; mode: 'append' | 'replace'; schema?: string; tables?: Record<string, string> };
  /** Every file of the run, each naming its source table as the manifest does. */
  files: { table: string; path: string; rows: number; sha256: string }[];
  format: LoadTargetRequest['format'];
  operationId: string;
}

const setRequestSchema = requestSchema.extend({
  target: z.strictObject({
    name: requestSchema.shape.target.shape.name,
    mode: z.enum(['append', 'replace']),
    schema: z.string().min(1).max(130).optional(),
    tables: z.record(z.string().min(1).max(300), z.string().min(1).max(300)).optional(),
  }),
  files: z.array(requestSchema.shape.files.element.extend({ table: z.string().min(1).max(300) })).max(100_000),
});

/** The request's files per source table (in the manifest's order), each table with its target. */
function setTables(
  req: z.output<typeof setRequestSchema>,
): { source: string; target: { schema: string; table: string }; files: LoadTargetSetRequest['files'] }[] {
  const bySource = new Map<string, LoadTargetSetRequest['files']>();
  for (const f of req.files) {
    const files = bySource.get(f.table) ?? [];
    files.push(f);
    bySource.set(f.table, files);
  }
  return [...bySource].map(([source, files]) => ({ source, target: targetTableOf(req.target, source), files }));
}

/** A load request checked against its schema: a bad one is INPUT_INVALID, naming the first bad field. */
function parseLoadRequest<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new PgExtractError(ErrorCode.INPUT_INVALID, `load request: ${issue?.message}`, { field: issue?.path.join('.') });
}

/**
 * Runs a load activity's body while heartbeating its progress (a dead loader worker is noticed by
 * the heartbeat timeout; a cancellation arrives with a heartbeat's response). A definite failure
 * anywhere in it, configuration included, becomes a `failed` report, so the run aborts at once.
 */
async function reporting<T>(operationId: string, failed: (report: LoadReport) => T, body: (progress: { bytes: number }) => Promise<T>): Promise<T> {
  const progress = { bytes: 0 };
  const stopHeartbeat = heartbeatEvery(heartbeatInterval(), () => progress);
  try {
    return await body(progress);
  } catch (err) {
    const reason = definiteLoadFailure(err);
    if (reason === null) throw err;
    return failed({ outcome: 'failed', operationId, reason, rows: null });
  } finally {
    stopHeartbeat();
  }
}

export interface LoadInternalRequest {
  input: ExtractionInput;
  operationId: string;
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

  return {
    /** Internal query: source and target are one database (see {@link loadBySelect}). */
    async loadInternal(raw: LoadInternalRequest): Promise<{ report: LoadReport; receipt: ExtractionLifecycleReceipt | null }> {
      return withFailures(async () => {
        const { input, operationId } = parseNamed(raw);
        if (!input.target || input.target.via !== 'internal')
          throw new PgExtractError(ErrorCode.INPUT_INVALID, 'loadInternal needs target.via = internal', { field: 'target.via' });
        const { mode, name } = input.target;
        const destination = parseTableName(input.target.table!, 'target.table');
        return reporting(
          operationId,
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

    /**
     * Streaming PG → PG: a coordinator session exports the snapshot every range imports, and its
     * REPEATABLE READ transaction stays open until the target's outcome is known: committed →
     * COMMIT, anything else → ROLLBACK (a retried or failed load closes the session, which rolls back).
     */
    /** Streaming PG → PG (see {@link loadByStream}): no files; the source snapshot ends with the target's outcome. */
    async loadStream(raw: LoadInternalRequest): Promise<StreamLoadReport> {
      return withFailures(async () => {
        const { input, operationId } = parseNamed(raw);
        if (!input.target || input.target.via !== 'stream')
          throw new PgExtractError(ErrorCode.INPUT_INVALID, 'loadStream needs target.via = stream', { field: 'target.via' });
        const { mode, name } = input.target;
        const destination = parseTableName(input.target.table!, 'target.table');
        const load = {
          sourceUrl: sourceUrl(input.source),
          source: tableRequestOf(input),
          partitions: input.partitions,
          format: input.format,
          lockTimeoutMs: input.timeouts.lockTimeoutMs,
          destination,
          mode,
          operationId,
        };
        return reporting(
          operationId,
          (report): StreamLoadReport => ({ report, receipt: null, snapshotDigest: null }),
          async (progress) => loadByStream(targetUrl(name), load, Context.current().cancellationSignal, (bytes) => (progress.bytes = bytes)),
        );
      });
    },

    /** Drops what a stream left on the target under `operationId` (a vanished worker's, or a target unreachable at the time). */
    async releaseStreamStaging({ target: { name, table }, operationId }: { target: { name: string; table: string }; operationId: string }): Promise<void> {
      return withFailures(() => releaseStreamStaging(targetUrl(name), parseTableName(table, 'target.table'), operationId));
    },

    /** A run of several tables: every table into its mapped target table, in one transaction behind the fence. */
    async loadTargetSet(raw: LoadTargetSetRequest): Promise<LoadReport> {
      return withFailures(async () => {
        const req = parseLoadRequest(setRequestSchema, raw);
        return reporting(
          req.operationId,
          (report) => report,
          async (progress) => {
            const tables = setTables(req).map((t) => ({ ...t, files: readable(t.files) }));
            const load = { tables, format: req.format, mode: req.target.mode, operationId: req.operationId };
            return loadFileSet(targetUrl(req.target.name), load, Context.current().cancellationSignal, (bytes) => (progress.bytes = bytes));
          },
        );
      });
    },

    async loadTarget(raw: LoadTargetRequest): Promise<LoadReport> {
      return withFailures(async () => {
        const req = parseLoadRequest(requestSchema, raw);
        return reporting(
          req.operationId,
          (report) => report,
          async (progress) => {
            const destination = parseTableName(req.target.table, 'target.table');
            const files = readable(req.files);
            const load = { files, format: req.format, destination, mode: req.target.mode, operationId: req.operationId };
            return loadFiles(targetUrl(req.target.name), load, Context.current().cancellationSignal, (bytes) => (progress.bytes = bytes));
          },
        );
      });
    },
  };
}

/**
 * The built-in target owner's activity: load the manifest into a PostgreSQL target behind the
 * commit fence, and turn what happened into the target owner's report. An ambiguous COMMIT is
 * reconciled by its transaction's fate: committed → committed, aborted → failed, still in
 * progress after the wait or unreachable → unknown.
 * Definite failures (bad data for the target, a bad target definition, an unconfigured target)
 * are reported `failed`; failures a retry may cure (a dropped connection) are thrown and retried,
 * and the fence makes a retried load a no-op once one attempt committed. The activity heartbeats,
 * and a cancelled one cancels its target statement and reports once the transaction has ended.
 */
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { Client } from 'pg';
import { z } from 'zod';
import { ErrorCode, PgExtractError, errorCodeOf } from '../errors';
import type { ExtractionLifecycleReceipt, RowEvidence } from '../lifecycle/receipt';
import { digestSourceToken } from '../lifecycle/source-token';
import { resolveTable } from '../postgres/catalog';
import { insertSelectIntoStaging } from '../postgres/internal-query';
import { SnapshotCoordinator } from '../postgres/snapshot-coordinator';
import { dropStreamStaging, streamIntentDigest, streamIntoTarget } from '../postgres/stream-load';
import { closeSession, openSession } from '../postgres/session';
import { parseTableName, quoteQualified } from '../postgres/sql';
import { CommitUnacknowledged, type LoadResult, fencedTransaction, intentDigest, loadIntoTarget, moveIntoTarget, reconcileCommit } from '../postgres/target-loader';
import { loadSetIntoTarget, setIntentDigest } from '../postgres/target-set-loader';
import type { ExtractionInput } from '../shared/extraction-input';
import { targetTableOf } from '../shared/target-mapping';
import { sourceKindOf } from '../sources/source-kind';
import type { OutputStores } from '../storage/output-stores';
import type { TargetCommit } from '../shared/extraction-types';
import { withFailures } from './failures';
import { heartbeatEvery, heartbeatInterval } from './heartbeats';
import { definiteLoadFailure } from './load-failures';
import { parseNamed } from './requests';
import { tableRequestOf } from './table-request';

export interface LoadTargetRequest {
  target: { name: string; table: string; mode: 'append' | 'replace' };
  files: { path: string; rows: number; sha256: string }[];
  /** Parquet never reaches a load (the input refuses it); the schema below rejects it here too. */
  format: { format: 'csv' | 'binary' | 'parquet'; header: boolean; gzip: boolean };
  operationId: string;
}

/** What the loader reports, plus why when it did not commit. */
export interface LoadReport extends TargetCommit {
  reason: string | null;
  rows: number | null;
}

const requestSchema = z.strictObject({
  target: z.strictObject({ name: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,62}$/), table: z.string().min(1).max(300), mode: z.enum(['append', 'replace']) }),
  files: z.array(z.strictObject({ path: z.string().min(1).max(4096), rows: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/) })).max(10_000),
  format: z.strictObject({ format: z.enum(['csv', 'binary']), header: z.boolean(), gzip: z.boolean() }),
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
function setTables(req: z.output<typeof setRequestSchema>): { source: string; target: { schema: string; table: string }; files: LoadTargetSetRequest['files'] }[] {
  const bySource = new Map<string, LoadTargetSetRequest['files']>();
  for (const f of req.files) {
    const files = bySource.get(f.table) ?? [];
    files.push(f);
    bySource.set(f.table, files);
  }
  return [...bySource].map(([source, files]) => ({ source, target: targetTableOf(req.target, source), files }));
}

/**
 * Runs a fenced load and turns its end into the target owner's report: an ambiguous COMMIT is
 * reconciled by its transaction's fate; a fence holding another intent is unknown; a definite
 * failure (see {@link definiteLoadFailure}) is `failed`; anything else is thrown for a retry.
 */
async function report(operationId: string, url: string, digest: string, load: () => Promise<LoadResult>): Promise<LoadReport> {
  try {
    const result = await load();
    return { outcome: 'committed', operationId, reason: null, rows: result.status === 'committed' ? result.rows : null };
  } catch (err) {
    if (err instanceof CommitUnacknowledged) {
      const verdict = await reconcileCommit(() => openSession(url, 'target'), { operationId, digest, xid: err.xid });
      const outcome = verdict === 'committed' ? 'committed' : verdict === 'not_committed' ? 'failed' : 'unknown';
      return { outcome, operationId, reason: err.code, rows: null };
    }
    if (errorCodeOf(err) === ErrorCode.TARGET_FENCE_CONFLICT) return { outcome: 'unknown', operationId, reason: ErrorCode.TARGET_FENCE_CONFLICT, rows: null };
    throw err;
  }
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

/**
 * Opens the target session for `work`. When the activity is cancelled, the statement running on
 * it is cancelled on the server (pg_cancel_backend from a second session), so the load rolls back
 * promptly and the activity reports only once that transaction has ended.
 */
async function onTargetSession<T>(url: string, work: (client: Client, signal: AbortSignal) => Promise<T>): Promise<T> {
  const { cancellationSignal: signal } = Context.current();
  const client = await openSession(url, 'target');
  try {
    const pid: number = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    let cancelling: Promise<void> | undefined;
    const cancel = (): void => void (cancelling = cancelStatement(url, pid));
    signal.addEventListener('abort', cancel, { once: true });
    try {
      return await work(client, signal);
    } finally {
      signal.removeEventListener('abort', cancel);
      await cancelling;
    }
  } finally {
    await closeSession(client);
  }
}

/** Cancels whatever backend `pid` is running; best effort (a failed cancel leaves the next signal check to stop the load). */
async function cancelStatement(url: string, pid: number): Promise<void> {
  const probe = await openSession(url, 'probe').catch(() => null);
  if (!probe) return;
  await probe.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
  await closeSession(probe);
}

/** The same cluster (system identifier) and the same database, seen from both URLs. */
async function assertSameDatabase(sourceUrl: string, target: Client): Promise<void> {
  // A source of another kind (MySQL) is never the target database, and no PostgreSQL session can open on it.
  if (sourceKindOf(sourceUrl) !== 'postgresql') {
    throw new PgExtractError(ErrorCode.TARGET_NOT_SAME_DATABASE, 'target.via internal needs a PostgreSQL source that is the target database', { field: 'target.via' });
  }
  const identity = 'SELECT system_identifier::text || \'/\' || current_database() AS id FROM pg_control_system()';
  const source = await openSession(sourceUrl, 'probe');
  try {
    const [a, b] = await Promise.all([source.query<{ id: string }>(identity), target.query<{ id: string }>(identity)]);
    if (a.rows[0]?.id !== b.rows[0]?.id) {
      throw new PgExtractError(ErrorCode.TARGET_NOT_SAME_DATABASE, 'target.via internal needs the target to be the source database', { field: 'target.via' });
    }
  } finally {
    await closeSession(source);
  }
}

export interface LoadInternalRequest {
  input: ExtractionInput;
  operationId: string;
}

/** A stream's report, its receipt (null when it read nothing the target took: a definite failure or a fence answer) and its snapshot. */
export interface StreamLoadReport {
  report: LoadReport;
  receipt: ExtractionLifecycleReceipt | null;
  snapshotDigest: string | null;
}

/** How often the stream's coordinator proves its session alive (its idle timeout is 30 s), as the snapshot holder does. */
const COORDINATOR_PROBE_MS = 5000;

export function createLoadActivities({ targetUrl, sourceUrl, stores }: { targetUrl: (name: string) => string; sourceUrl: (name: string) => string; stores: OutputStores }) {
  return {
    /**
     * Internal query: source and target are one database, so the target session runs
     * `INSERT INTO staging … SELECT` and moves it into the target behind the fence. The receipt
     * is that statement's window; it is null when the fence answered a retry (no read happened).
     */
    async loadInternal(raw: LoadInternalRequest): Promise<{ report: LoadReport; receipt: ExtractionLifecycleReceipt | null }> {
      return withFailures(async () => {
        const { input, operationId } = parseNamed(raw);
        if (!input.target || input.target.via !== 'internal') throw new PgExtractError(ErrorCode.INPUT_INVALID, 'loadInternal needs target.via = internal', { field: 'target.via' });
        const { mode, name } = input.target;
        // The input's check gives every run it takes (one table) a target.table.
        const destination = parseTableName(input.target.table!, 'target.table');
        return reporting(operationId, (report) => ({ report, receipt: null }), async () => {
          const url = targetUrl(name);
          return onTargetSession(url, async (client, signal) => {
            await assertSameDatabase(sourceUrl(input.source), client);
            const source = await resolveTable(client, tableRequestOf(input));
            const target = await resolveTable(client, destination);
            const digest = `sha256:${createHash('sha256').update(`internal:${source.schema}.${source.table}->${target.schema}.${target.table}:${mode}`).digest('hex')}`;
            let receipt: ExtractionLifecycleReceipt | null = null;
            const result = await report(operationId, url, digest, () =>
              fencedTransaction(
                client,
                operationId,
                digest,
                `${target.schema}.${target.table}`,
                async () => {
                  const staged = await insertSelectIntoStaging(client, source, { schema: target.schema });
                  receipt = staged.extractionReceipt;
                  await moveIntoTarget(client, quoteQualified(staged.artifact.schema, staged.artifact.name), quoteQualified(target.schema, target.table), mode);
                  return staged.artifact.rows;
                },
                signal,
              ),
            );
            return { report: result, receipt };
          });
        });
      });
    },

    /**
     * Streaming PG → PG: a coordinator session exports the snapshot every range imports, and its
     * REPEATABLE READ transaction stays open until the target's outcome is known: committed →
     * COMMIT, anything else → ROLLBACK (a retried or failed load closes the session, which rolls back).
     */
    async loadStream(raw: LoadInternalRequest): Promise<StreamLoadReport> {
      return withFailures(async () => {
        const { input, operationId } = parseNamed(raw);
        if (!input.target || input.target.via !== 'stream') throw new PgExtractError(ErrorCode.INPUT_INVALID, 'loadStream needs target.via = stream', { field: 'target.via' });
        const { mode, name } = input.target;
        // The input's check gives every run it takes (one table) a target.table.
        const destination = parseTableName(input.target.table!, 'target.table');
        return reporting(operationId, (report): StreamLoadReport => ({ report, receipt: null, snapshotDigest: null }), async (progress) => {
          const url = targetUrl(name);
          const source = sourceUrl(input.source);
          return onTargetSession(url, async (client, signal) => {
            const target = await resolveTable(client, destination);
            const session = await openSession(source, 'coordinator');
            let probing: NodeJS.Timeout | undefined;
            try {
              const lockTimeoutMs = input.timeouts.lockTimeoutMs;
              const coordinator = await SnapshotCoordinator.export(session, tableRequestOf(input), { partitions: input.partitions }, { lockTimeoutMs });
              probing = setInterval(() => void coordinator.probe().catch(() => undefined), COORDINATOR_PROBE_MS);
              const request = { plan: coordinator.plan, schema: target.schema, table: target.table, mode, format: input.format, lockTimeoutMs, operationId };
              const sessions = { source: () => openSession(source, 'stream'), target: () => openSession(url, 'target'), close: closeSession };
              let evidence = null as RowEvidence[] | null;
              const onStreamed = (streamed: RowEvidence[]): void => void (evidence = streamed);
              const result = await report(operationId, url, streamIntentDigest(request), () =>
                streamIntoTarget(client, sessions, request, { signal, onBytes: (bytes) => (progress.bytes = bytes), onStreamed }),
              );
              clearInterval(probing);
              const end = result.outcome === 'committed' ? 'COMMIT' : 'ROLLBACK';
              const receipt = evidence ? await coordinator.complete(evidence, end) : (await coordinator.abort(), null);
              return { report: result, receipt, snapshotDigest: digestSourceToken(coordinator.plan.snapshotText) };
            } finally {
              clearInterval(probing);
              await closeSession(session);
            }
          });
        });
      });
    },

    /** Drops what a stream left on the target under `operationId` (a vanished worker's, or a target unreachable at the time). */
    async releaseStreamStaging({ target: { name, table }, operationId }: { target: { name: string; table: string }; operationId: string }): Promise<void> {
      return withFailures(async () => {
        const client = await openSession(targetUrl(name), 'target');
        try {
          const resolved = await resolveTable(client, parseTableName(table, 'target.table'));
          await dropStreamStaging(client, resolved.schema, operationId);
        } finally {
          await closeSession(client);
        }
      });
    },

    /** A run of several tables: every table into its mapped target table, in one transaction behind the fence. */
    async loadTargetSet(raw: LoadTargetSetRequest): Promise<LoadReport> {
      return withFailures(async () => {
        const parsed = setRequestSchema.safeParse(raw);
        if (!parsed.success) throw new PgExtractError(ErrorCode.INPUT_INVALID, `load request: ${parsed.error.issues[0]?.message}`, { field: parsed.error.issues[0]?.path.join('.') });
        const req = parsed.data;
        return reporting(req.operationId, (report) => report, async (progress) => {
          const mapped = setTables(req);
          const url = targetUrl(req.target.name);
          return onTargetSession(url, async (client, signal) => {
            const tables = [];
            const seen = new Map<string, string>();
            for (const { source, target, files } of mapped) {
              const resolved = await resolveTable(client, target);
              const name = `${resolved.schema}.${resolved.table}`;
              if (seen.has(name)) throw new PgExtractError(ErrorCode.TARGET_MAPPING_INVALID, `${seen.get(name)} and ${source} both map onto ${name}`, { field: 'target' });
              seen.set(name, source);
              tables.push({ schema: resolved.schema, table: resolved.table, files: files.map((f) => ({ ...f, open: () => stores.of(f.path).read(f.path) })) });
            }
            const request = { tables, format: req.format, mode: req.target.mode, operationId: req.operationId };
            return report(req.operationId, url, setIntentDigest(request), () => loadSetIntoTarget(client, request, { signal, onBytes: (bytes) => (progress.bytes = bytes) }));
          });
        });
      });
    },

    async loadTarget(raw: LoadTargetRequest): Promise<LoadReport> {
      return withFailures(async () => {
        const parsed = requestSchema.safeParse(raw);
        if (!parsed.success) throw new PgExtractError(ErrorCode.INPUT_INVALID, `load request: ${parsed.error.issues[0]?.message}`, { field: parsed.error.issues[0]?.path.join('.') });
        const req = parsed.data;
        return reporting(req.operationId, (report) => report, async (progress) => {
          const url = targetUrl(req.target.name);
          const { schema, table } = parseTableName(req.target.table, 'target.table');
          const files = req.files.map((f) => ({ ...f, open: () => stores.of(f.path).read(f.path) }));
          return onTargetSession(url, async (client, signal) => {
            const resolved = await resolveTable(client, { schema, table });
            const request = { files, format: req.format, schema: resolved.schema, table: resolved.table, mode: req.target.mode, operationId: req.operationId };
            return report(req.operationId, url, intentDigest(request), () => loadIntoTarget(client, request, { signal, onBytes: (bytes) => (progress.bytes = bytes) }));
          });
        });
      });
    },
  };
}

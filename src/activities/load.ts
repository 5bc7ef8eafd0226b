/**
 * The built-in target owner's activity: load the manifest into a PostgreSQL target behind the
 * commit fence, and turn what happened into the target owner's report. An ambiguous COMMIT is
 * reconciled by its transaction's fate: committed → committed, aborted → failed, still in
 * progress after the wait or unreachable → unknown.
 * Failures before COMMIT that a retry may cure (a dropped connection) are thrown and retried;
 * the fence makes a retried load a no-op once one attempt committed.
 */
import { createHash } from 'node:crypto';
import type { Client } from 'pg';
import { z } from 'zod';
import { ErrorCode, PgExtractError, errorCodeOf } from '../errors';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import { resolveTable } from '../postgres/catalog';
import { insertSelectIntoStaging } from '../postgres/internal-query';
import { closeSession, openSession } from '../postgres/session';
import { parseTableName, quoteQualified } from '../postgres/sql';
import { CommitUnacknowledged, type LoadResult, fencedTransaction, intentDigest, loadIntoTarget, moveIntoTarget, reconcileCommit } from '../postgres/target-loader';
import { checkOutputFile } from '../output-root';
import type { ExtractionInput } from '../shared/extraction-input';
import type { TargetCommit } from '../shared/extraction-types';
import { withFailures } from './failures';
import { parseNamed } from './requests';
import { tableRequestOf } from './table-request';

export interface LoadTargetRequest {
  target: { name: string; table: string; mode: 'append' | 'replace' };
  files: { path: string; rows: number; sha256: string }[];
  format: { format: 'csv' | 'binary'; header: boolean; gzip: boolean };
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

/** Codes after which retrying the same load cannot help: report `failed` instead. */
const DEFINITE_FAILURES = new Set<string>([ErrorCode.TARGET_CHECKSUM_MISMATCH, ErrorCode.TABLE_NOT_FOUND, ErrorCode.IDENTIFIER_INVALID]);

/**
 * Runs a fenced load and turns its end into the target owner's report: an ambiguous COMMIT is
 * reconciled; definite failures are `failed`; anything else is thrown for a retry.
 */
async function report(operationId: string, url: string, digest: string, load: () => Promise<LoadResult>): Promise<LoadReport> {
  try {
    const result = await load();
    return { outcome: 'committed', operationId, reason: null, rows: result.status === 'committed' ? result.rows : null };
  } catch (err) {
    const code = errorCodeOf(err);
    if (err instanceof CommitUnacknowledged) {
      const verdict = await reconcileCommit(() => openSession(url, 'target'), { operationId, digest, xid: err.xid });
      const outcome = verdict === 'committed' ? 'committed' : verdict === 'not_committed' ? 'failed' : 'unknown';
      return { outcome, operationId, reason: err.code, rows: null };
    }
    if (code && DEFINITE_FAILURES.has(code)) return { outcome: 'failed', operationId, reason: code, rows: null };
    if (code === ErrorCode.TARGET_FENCE_CONFLICT) return { outcome: 'unknown', operationId, reason: code, rows: null };
    throw err;
  }
}

/** The same cluster (system identifier) and the same database, seen from both URLs. */
async function assertSameDatabase(sourceUrl: string, target: Client): Promise<void> {
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

export function createLoadActivities({ targetUrl, sourceUrl, outputRoot }: { targetUrl: (name: string) => string; sourceUrl: (name: string) => string; outputRoot: string }) {
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
        const { mode } = input.target;
        const url = targetUrl(input.target.name);
        const destination = parseTableName(input.target.table, 'target.table');
        const client = await openSession(url, 'target');
        try {
          await assertSameDatabase(sourceUrl(input.source), client);
          const source = await resolveTable(client, tableRequestOf(input));
          const target = await resolveTable(client, destination);
          const digest = `sha256:${createHash('sha256').update(`internal:${source.schema}.${source.table}->${target.schema}.${target.table}:${mode}`).digest('hex')}`;
          let receipt: ExtractionLifecycleReceipt | null = null;
          const result = await report(operationId, url, digest, () =>
            fencedTransaction(client, operationId, digest, `${target.schema}.${target.table}`, async () => {
              const staged = await insertSelectIntoStaging(client, source, { schema: target.schema });
              receipt = staged.extractionReceipt;
              await moveIntoTarget(client, quoteQualified(staged.artifact.schema, staged.artifact.name), quoteQualified(target.schema, target.table), mode);
              return staged.artifact.rows;
            }),
          );
          return { report: result, receipt };
        } finally {
          await closeSession(client);
        }
      });
    },

    async loadTarget(raw: LoadTargetRequest): Promise<LoadReport> {
      return withFailures(async () => {
        const parsed = requestSchema.safeParse(raw);
        if (!parsed.success) throw new PgExtractError(ErrorCode.INPUT_INVALID, `load request: ${parsed.error.issues[0]?.message}`, { field: parsed.error.issues[0]?.path.join('.') });
        const req = parsed.data;
        const url = targetUrl(req.target.name);
        const { schema, table } = parseTableName(req.target.table, 'target.table');
        const files = await Promise.all(req.files.map(async (f) => ({ ...f, path: await checkOutputFile(outputRoot, f.path) })));
        const load = { files, format: req.format, schema, table, mode: req.target.mode, operationId: req.operationId };
        const client = await openSession(url, 'target');
        try {
          const resolved = await resolveTable(client, { schema, table });
          const request = { ...load, schema: resolved.schema, table: resolved.table };
          return await report(req.operationId, url, intentDigest(request), () => loadIntoTarget(client, request));
        } finally {
          await closeSession(client);
        }
      });
    },
  };
}

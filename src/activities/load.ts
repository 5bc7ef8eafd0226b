/**
 * The built-in target owner's activity: load the manifest into a PostgreSQL target behind the
 * commit fence, and turn what happened into the target owner's report. An ambiguous COMMIT is
 * reconciled against the fence: found → committed, absent → failed, unreachable → unknown.
 * Failures before COMMIT that a retry may cure (a dropped connection) are thrown and retried;
 * the fence makes a retried load a no-op once one attempt committed.
 */
import { z } from 'zod';
import { ErrorCode, PgExtractError, errorCodeOf } from '../errors';
import { resolveTable } from '../postgres/catalog';
import { closeSession, openSession } from '../postgres/session';
import { parseTableName } from '../postgres/sql';
import { intentDigest, loadIntoTarget, reconcileCommit } from '../postgres/target-loader';
import { checkOutputFile } from '../output-root';
import type { TargetCommit } from '../shared/extraction-types';
import { withFailures } from './failures';

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

export function createLoadActivities({ targetUrl, outputRoot }: { targetUrl: (name: string) => string; outputRoot: string }) {
  return {
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
          const result = await loadIntoTarget(client, { ...load, schema: resolved.schema, table: resolved.table });
          return { outcome: 'committed', operationId: req.operationId, reason: null, rows: result.status === 'committed' ? result.rows : null };
        } catch (err) {
          const code = errorCodeOf(err);
          if (code === ErrorCode.TARGET_COMMIT_AMBIGUOUS) {
            const verdict = await reconcileCommit(() => openSession(url, 'target'), req.operationId, intentDigest(load));
            const outcome = verdict === 'committed' ? 'committed' : verdict === 'not_committed' ? 'failed' : 'unknown';
            return { outcome, operationId: req.operationId, reason: code, rows: null };
          }
          if (code && DEFINITE_FAILURES.has(code)) return { outcome: 'failed', operationId: req.operationId, reason: code, rows: null };
          if (code === ErrorCode.TARGET_FENCE_CONFLICT) return { outcome: 'unknown', operationId: req.operationId, reason: code, rows: null };
          throw err;
        } finally {
          await closeSession(client);
        }
      });
    },
  };
}

/**
 * The workflow's input, validated with zod at the client and again at every activity boundary.
 * It names a source configured on the worker; no credential ever travels in it.
 */
import { isAbsolute, normalize } from 'node:path';
import { z } from 'zod';
import { ErrorCode, PgExtractError } from '../errors';
import { formatS3Url, isS3Url, parseS3Url } from './s3-url';
import { parseColumnName, parseTableName } from './identifiers';

/** How long the coordinator and each partition wait for a lock by default. */
export const DEFAULT_LOCK_TIMEOUT_MS = 30_000;

const identifierCheck = (parse: (v: string) => unknown) => (value: string, ctx: z.RefinementCtx) => {
  try {
    parse(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message, params: { code: ErrorCode.IDENTIFIER_INVALID } });
  }
};

const millis = (max: number) => z.number().int().positive().max(max);
const HOUR = 3_600_000;

export const extractionInputSchema = z.strictObject({
  /** A source name the worker resolves to a URL (`default` → PG_EXTRACT_SOURCE_URL). */
  source: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,62}$/, 'a source name: letters, digits, underscores').default('default'),
  /** `schema.table` or `table`. */
  table: z.string().min(1).max(300).superRefine(identifierCheck((v) => parseTableName(v))),
  /** Columns to export (all when absent). */
  columns: z.array(z.string().max(130).superRefine(identifierCheck((v) => parseColumnName(v, 'columns')))).min(1).max(1600).optional(),
  /** Split key (the single-column primary key when absent). */
  key: z.string().max(130).superRefine(identifierCheck((v) => parseColumnName(v, 'key'))).optional(),
  partitions: z.union([z.literal('auto'), z.number().int().min(1).max(256)]).default('auto'),
  format: z.enum(['csv', 'binary']).default('csv'),
  header: z.boolean().default(true),
  gzip: z.boolean().default(false),
  /**
   * Parent of the run's output folder (`<outDir>/<runId>/attempt-N`): a folder relative to the
   * worker's output root (absolute paths must lie inside it), or `s3://bucket/prefix` — object
   * storage every worker shares, with endpoint and credentials from the worker's AWS_* environment.
   */
  outDir: z
    .string()
    .min(1)
    .max(1024)
    .refine((v) => !v.includes('\0'), 'no NUL bytes')
    .superRefine((v, ctx) => {
      if (!isS3Url(v)) {
        if (!isAbsolute(v) && normalize(v).startsWith('..')) ctx.addIssue({ code: 'custom', message: 'must not leave the output root', params: { code: ErrorCode.OUTPUT_PATH_ESCAPES_ROOT } });
        return;
      }
      try {
        parseS3Url(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message, params: { code: ErrorCode.OUTPUT_PATH_ESCAPES_ROOT } });
      }
    })
    // One spelling of a location (no trailing slash), so the run's folder names are well formed.
    .transform((v) => (isS3Url(v) ? formatS3Url(parseS3Url(v)) : v))
    .optional(),
  /**
   * Load into a PostgreSQL target with the built-in loader (the worker resolves `name` from
   * PG_EXTRACT_TARGET_<NAME>_URL) instead of waiting for an external target owner.
   */
  target: z
    .strictObject({
      name: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,62}$/, 'a target name: letters, digits, underscores'),
      table: z.string().min(1).max(300).superRefine(identifierCheck((v) => parseTableName(v, 'target.table'))),
      mode: z.enum(['append', 'replace']).default('append'),
      /**
       * `files`: extract to files, then COPY them in. `internal`: source and target are the same
       * database, so one `INSERT INTO staging … SELECT` on the target session, no files.
       */
      via: z.enum(['files', 'internal']).default('files'),
    })
    .optional(),
  /** How long to wait for the target owner before retaining the files as `retain_commit_unknown`. */
  commitDeadlineMs: millis(30 * 24 * HOUR).default(24 * HOUR),
  /** Fresh snapshots to try when the snapshot holder is lost. */
  maxSnapshotAttempts: z.number().int().min(1).max(10).default(3),
  partitionRetry: z
    .strictObject({
      maximumAttempts: z.number().int().min(1).max(100).default(5),
      initialIntervalMs: millis(HOUR).default(1000),
    })
    .default({ maximumAttempts: 5, initialIntervalMs: 1000 }),
  timeouts: z
    .strictObject({
      /** A holder that stops heartbeating this long is lost. */
      holderHeartbeatMs: millis(HOUR).default(20_000),
      /** A partition that stops heartbeating this long is retried elsewhere. */
      partitionHeartbeatMs: millis(HOUR).default(20_000),
      partitionStartToCloseMs: millis(48 * HOUR).default(12 * HOUR),
      /** How long the coordinator and each partition wait for the table's ACCESS SHARE before failing with LOCK_TIMEOUT. */
      lockTimeoutMs: millis(HOUR).default(DEFAULT_LOCK_TIMEOUT_MS),
      /** A built-in load that stops heartbeating this long is retried elsewhere. */
      loadHeartbeatMs: millis(HOUR).default(20_000),
    })
    .default({ holderHeartbeatMs: 20_000, partitionHeartbeatMs: 20_000, partitionStartToCloseMs: 12 * HOUR, lockTimeoutMs: DEFAULT_LOCK_TIMEOUT_MS, loadHeartbeatMs: 20_000 }),
});

/** What callers pass (defaults optional). */
export type ExtractionRequest = z.input<typeof extractionInputSchema>;
/** What the workflow and activities see (defaults applied). */
export type ExtractionInput = z.output<typeof extractionInputSchema>;

/** The largest input we accept, in JSON bytes: well under Temporal's payload limits. */
export const MAX_INPUT_BYTES = 64 * 1024;

/** Parses or throws a PgExtractError naming the first bad field. */
export function parseExtractionInput(raw: unknown): ExtractionInput {
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(raw) ?? '');
  } catch {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, 'input is not JSON-serializable');
  }
  if (size > MAX_INPUT_BYTES) throw new PgExtractError(ErrorCode.INPUT_INVALID, `input is ${size} bytes; at most ${MAX_INPUT_BYTES}`);
  const parsed = extractionInputSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join('.') || 'input';
  const code = (issue as { params?: { code?: ErrorCode } }).params?.code ?? ErrorCode.INPUT_INVALID;
  throw new PgExtractError(code, `${field}: ${issue.message}`, { field });
}

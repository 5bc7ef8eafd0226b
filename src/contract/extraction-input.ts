/**
 * The workflow's input, validated with zod at the client and again at every activity boundary.
 * It names a source configured on the worker; no credential ever travels in it.
 */
import { isAbsolute, normalize } from 'node:path';
import { z } from 'zod';
import { ErrorCode, PgExtractError } from '../errors';
import { parseOrThrow } from './parse';
import { climbsOut } from './relative-path';
import { MAX_FILE_BYTES, MAX_FILE_BYTES_HINT, MAX_FILE_ROWS, MIN_FILE_BYTES, parseByteSize } from './file-bounds';
import { COMPRESSIONS, MAX_ROW_GROUP_ROWS, formatOptionsCheck } from './format-options';
import { checkNewRunTargetMapping, checkTargetMapping } from './target-mapping';
import { type S3UrlProblem, S3_PREFIX_MAX_BYTES, formatS3Url, isS3Url, keyBytes, newPrefixProblem, parseS3Url } from './s3-url';
import { formatName, formatTableName, parseColumnName, parseSchemaName, parseTableName } from './identifiers';
import { DEFAULT_LOAD_START_TO_CLOSE_MS, INPUT_LIMITS, NAME_LENGTHS } from './input-limits';

/** How long the coordinator and each partition wait for a lock by default. */
export const DEFAULT_LOCK_TIMEOUT_MS = 30_000;

const identifierCheck = (parse: (v: string) => unknown) => (value: string, ctx: z.RefinementCtx) => {
  try {
    parse(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message, params: { code: ErrorCode.IDENTIFIER_INVALID } });
  }
};

const tableName = z
  .string()
  .min(1)
  .max(NAME_LENGTHS.table)
  .superRefine(identifierCheck((v) => parseTableName(v)));
const glob = z.string().min(1).max(200);
/** The most tables one run takes: each is a few hundred bytes of plan, batch result and receipt in the parent's history (2,000 measured: 5 MB, largest event 1.2 MB of the 2 MB limit). */
export const MAX_TABLES = 2000;

const invalidBound = (message: string) => ({ code: 'custom' as const, message, params: { code: ErrorCode.FILE_BOUND_INVALID } });

/** A byte bound as a number or a size string (`256MB`, `1GiB`); parsed to bytes. */
const maxFileBytesSchema = z.union([z.number(), z.string().max(40)]).transform((value, ctx) => {
  const bytes = typeof value === 'number' ? value : parseByteSize(value);
  if (bytes === undefined || !Number.isSafeInteger(bytes) || bytes < MIN_FILE_BYTES || bytes > MAX_FILE_BYTES) {
    ctx.addIssue(invalidBound(MAX_FILE_BYTES_HINT));
    return z.NEVER;
  }
  return bytes;
});

// NaN too (what a CLI makes of a word), so it gets this field's code rather than a type error.
const maxFileRowsSchema = z.union([z.number(), z.nan()]).superRefine((n, ctx) => {
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_FILE_ROWS) ctx.addIssue(invalidBound('a whole number of rows, at least 1'));
});

const millis = (max: number) => z.number().int().positive().max(max);
const HOUR = 3_600_000;

export const extractionInputSchema = z
  .strictObject({
    /** A source name the worker resolves to a URL (`default` → PG_EXTRACT_SOURCE_URL). */
    source: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_]{0,62}$/, 'a source name: letters, digits, underscores')
      .default('default'),
    /** `schema.table` or `table`: one table. Exactly one of `table`, `tables` and `schema` is given. */
    table: tableName.optional(),
    /** Several tables (views and materialized views too), exported at one snapshot. */
    tables: z.array(tableName).min(1).max(MAX_TABLES).optional(),
    /** Every ordinary and partitioned table of this schema, at one snapshot (narrowed by include/exclude). */
    schema: z
      .string()
      .max(NAME_LENGTHS.schema)
      .superRefine(identifierCheck((v) => parseSchemaName(v, 'schema')))
      .optional(),
    /** Glob patterns (`*`, `?`) on table names in `schema`: keep the tables any of them matches. */
    include: z.array(glob).min(1, 'an empty include keeps no table: omit it to keep every table').max(100).optional(),
    /** Glob patterns on table names in `schema`: drop the tables any of them matches (none when empty). */
    exclude: z.array(glob).max(100).optional(),
    /** A run's partitions in flight at once, over all its tables (runs of several tables). */
    maxInFlight: z.number().int().min(1).max(INPUT_LIMITS.maxInFlight).default(8),
    /** Columns to export (all when absent). */
    columns: z
      .array(
        z
          .string()
          .max(130)
          .superRefine(identifierCheck((v) => parseColumnName(v, 'columns'))),
      )
      .min(1)
      .max(1600)
      .optional(),
    /** Split key (when absent: a single-column primary key or unique index, else ctid page ranges). */
    key: z
      .string()
      .max(130)
      .superRefine(identifierCheck((v) => parseColumnName(v, 'key')))
      .optional(),
    partitions: z.union([z.literal('auto'), z.number().int().min(1).max(256)]).default('auto'),
    format: z.enum(['csv', 'binary', 'parquet']).default('csv'),
    header: z.boolean().default(true),
    gzip: z.boolean().default(false),
    /** CSV and binary: the whole file's, zstd, gzip or none (none when absent); Parquet: its columns', zstd, snappy or none (zstd when absent). */
    compression: z.enum(COMPRESSIONS).optional(),
    /** Rows per Parquet row group (DEFAULT_ROW_GROUP_ROWS when absent): what a writer holds in memory at once. */
    rowGroupRows: z.number().int().min(1).max(MAX_ROW_GROUP_ROWS).optional(),
    /** Batched files: each partition (or the whole copy) writes a sequence of files of at most this many bytes (`256MB`, `1GiB` or a number). */
    maxFileBytes: maxFileBytesSchema.optional(),
    /** Batched files: at most this many rows per file. */
    maxFileRows: maxFileRowsSchema.optional(),
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
          if (!isAbsolute(v) && climbsOut(normalize(v)))
            ctx.addIssue({ code: 'custom', message: 'must not leave the output root', params: { code: ErrorCode.OUTPUT_PATH_ESCAPES_ROOT } });
          return;
        }
        try {
          parseS3Url(v);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message, params: { code: (err as S3UrlProblem).code } });
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
        /** The target table of a one-table run. */
        table: z
          .string()
          .min(1)
          .max(300)
          .superRefine(identifierCheck((v) => parseTableName(v, 'target.table')))
          .optional(),
        /** A run of several tables: each table loads into the table of its name in this schema. */
        schema: z
          .string()
          .max(130)
          .superRefine(identifierCheck((v) => parseSchemaName(v, 'target.schema')))
          .optional(),
        /** A run of several tables: `{ 'source.table': 'target.table' }` for each table of the run. */
        tables: z
          .record(
            tableName,
            z
              .string()
              .min(1)
              .max(300)
              .superRefine(identifierCheck((v) => parseTableName(v, 'target.tables'))),
          )
          .optional(),
        mode: z.enum(['append', 'replace']).default('append'),
        /**
         * `files`: extract to files, then COPY them in. `internal`: source and target are the same
         * database, so one `INSERT INTO staging … SELECT` on the target session, no files.
         * `stream`: each partition's COPY TO flows straight into a COPY FROM on the target, no files.
         */
        via: z.enum(['files', 'internal', 'stream']).default('files'),
      })
      .optional(),
    /** How long to wait for the target owner before retaining the files as `retain_commit_unknown`. */
    commitDeadlineMs: millis(INPUT_LIMITS.commitDeadlineMs).default(24 * HOUR),
    /** Fresh snapshots to try when the snapshot holder is lost. */
    maxSnapshotAttempts: z.number().int().min(1).max(INPUT_LIMITS.maxSnapshotAttempts).default(3),
    partitionRetry: z
      .strictObject({
        maximumAttempts: z.number().int().min(1).max(INPUT_LIMITS['partitionRetry.maximumAttempts']).default(5),
        initialIntervalMs: millis(INPUT_LIMITS['partitionRetry.initialIntervalMs']).default(1000),
      })
      .default({ maximumAttempts: 5, initialIntervalMs: 1000 }),
    timeouts: z
      .strictObject({
        /** A holder that stops heartbeating this long is lost. */
        holderHeartbeatMs: millis(INPUT_LIMITS['timeouts.holderHeartbeatMs']).default(20_000),
        /** A partition that stops heartbeating this long is retried elsewhere. */
        partitionHeartbeatMs: millis(INPUT_LIMITS['timeouts.partitionHeartbeatMs']).default(20_000),
        partitionStartToCloseMs: millis(INPUT_LIMITS['timeouts.partitionStartToCloseMs']).default(12 * HOUR),
        /** How long the coordinator and each partition wait for the table's ACCESS SHARE before failing with LOCK_TIMEOUT. */
        lockTimeoutMs: millis(INPUT_LIMITS['timeouts.lockTimeoutMs']).default(DEFAULT_LOCK_TIMEOUT_MS),
        /** A built-in load that stops heartbeating this long is retried elsewhere. */
        loadHeartbeatMs: millis(INPUT_LIMITS['timeouts.loadHeartbeatMs']).default(20_000),
        /** A built-in load's attempt that runs this long times out and is tried again (the commit fence lets at most one commit): raise it for loads of many TB. */
        loadStartToCloseMs: millis(INPUT_LIMITS['timeouts.loadStartToCloseMs']).default(DEFAULT_LOAD_START_TO_CLOSE_MS),
      })
      .default({
        holderHeartbeatMs: 20_000,
        partitionHeartbeatMs: 20_000,
        partitionStartToCloseMs: 12 * HOUR,
        lockTimeoutMs: DEFAULT_LOCK_TIMEOUT_MS,
        loadHeartbeatMs: 20_000,
        loadStartToCloseMs: DEFAULT_LOAD_START_TO_CLOSE_MS,
      }),
  })
  .superRefine(formatOptionsCheck)
  .superRefine(checkSelection)
  .superRefine(checkTargetMapping)
  .superRefine(checkStream);

/** One way to name the tables; per-table choices (columns, key) only for one table; no table named twice. */
function checkSelection(
  input: { table?: string; tables?: string[]; schema?: string; include?: string[]; exclude?: string[]; columns?: unknown; key?: unknown },
  ctx: z.RefinementCtx,
): void {
  const given = (['table', 'tables', 'schema'] as const).filter((k) => input[k] !== undefined);
  if (given.length !== 1) {
    ctx.addIssue({
      code: 'custom',
      path: [given[1] ?? 'table'],
      message: given.length ? `give one of table, tables, schema; got ${given.join(' and ')}` : 'give table, tables or schema',
    });
    return;
  }
  for (const k of ['include', 'exclude'] as const) {
    if (input[k] !== undefined && input.schema === undefined) ctx.addIssue({ code: 'custom', path: [k], message: `${k} narrows a schema: give schema` });
  }
  for (const k of ['columns', 'key'] as const) {
    if (input[k] !== undefined && input.table === undefined)
      ctx.addIssue({ code: 'custom', path: [k], message: `${k} applies to one table: each of several tables takes its primary key and all columns` });
  }
  // Manifests and data packages name a table `schema.table` unquoted, so two tables that read
  // alike that way (`"a.b".c`, `a."b.c"`) cannot be told apart in one run's files either.
  const seen = new Map<string, string>();
  for (const name of input.tables ?? []) {
    let key: string;
    let exact: string;
    try {
      const parsed = parseTableName(name);
      key = `${parsed.schema}.${parsed.table}`;
      exact = formatTableName(parsed);
    } catch {
      continue; // The element's own check reports it.
    }
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      const message = earlier === exact ? `${key} is named twice` : `${earlier} and ${exact} are both ${key} in a run's manifest: extract them in two runs`;
      ctx.addIssue({ code: 'custom', path: ['tables'], message, params: { code: ErrorCode.TABLE_DUPLICATE } });
    } else seen.set(key, exact);
  }
}

/** A stream stores nothing, so options that shape stored files would be silently ignored. */
function checkStream(input: { target?: { via?: string }; gzip?: boolean; compression?: string; outDir?: string }, ctx: z.RefinementCtx): void {
  const compressed = input.gzip || (input.compression !== undefined && input.compression !== 'none');
  if (input.target?.via === 'stream' && (compressed || input.outDir !== undefined)) {
    ctx.addIssue({ code: 'custom', path: ['target', 'via'], message: 'a stream writes no files: compression, gzip and outDir do not apply' });
  }
}

/** What callers pass (defaults optional). */
export type ExtractionRequest = z.input<typeof extractionInputSchema>;
/** What the workflow and activities see (defaults applied). */
export type ExtractionInput = z.output<typeof extractionInputSchema>;

/** The largest input we accept, in JSON bytes: well under Temporal's payload limits. */
export const MAX_INPUT_BYTES = 64 * 1024;

/**
 * {@link parseExtractionInput} and the checks only a run about to start gets: a step of a running
 * run parses its input again, and a run an earlier version accepted must go on being accepted.
 * Here: an S3 prefix short enough for the run's folder and file names beneath it, checked before
 * the run starts rather than when its first object is written, that listings give back and that is
 * no other run's folder ({@link newPrefixProblem}), target.tables keys that name the run's own
 * tables ({@link checkNewRunTargetMapping}), and columns that name each column once ({@link checkColumnsOnce}).
 */
export function parseNewRunInput(raw: unknown): ExtractionInput {
  const input = parseExtractionInput(raw);
  checkNewRunTargetMapping(input);
  if (input.columns !== undefined) checkColumnsOnce(input.columns);
  if (input.outDir !== undefined && isS3Url(input.outDir)) checkNewS3Prefix(parseS3Url(input.outDir).key);
  return input;
}

/**
 * Each column once, as the source reads names (`id`, `ID` and `"id"` are one column): a column
 * named twice was exported twice (a file and a data package with two columns of one name), and a
 * load of those files failed once they existed (COPY's `column specified more than once`).
 */
function checkColumnsOnce(columns: string[]): void {
  const seen = new Map<string, string>();
  for (const given of columns) {
    const name = parseColumnName(given, 'columns');
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      const message = earlier === given ? `${given} is named twice` : `${earlier} and ${given} both name the column ${formatName(name)}`;
      throw new PgExtractError(ErrorCode.INPUT_INVALID, `columns: ${message}`, { field: 'columns' });
    }
    seen.set(name, given);
  }
}

/** The S3 prefix a new run writes under (a running run's steps parse its input without this: see {@link parseNewRunInput}). */
function checkNewS3Prefix(key: string): void {
  const refuse = (message: string): never => {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `outDir: ${message}`, { field: 'outDir' });
  };
  if (keyBytes(key) > S3_PREFIX_MAX_BYTES) refuse(`an S3 prefix of at most ${S3_PREFIX_MAX_BYTES} bytes: the run's folder and file names go beneath it`);
  const problem = newPrefixProblem(key);
  if (problem) refuse(`the S3 prefix ${problem}`);
}

/** Parses or throws a PgExtractError naming the first bad field. */
export function parseExtractionInput(raw: unknown): ExtractionInput {
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(raw) ?? '');
  } catch {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, 'input is not JSON-serializable');
  }
  if (size > MAX_INPUT_BYTES) throw new PgExtractError(ErrorCode.INPUT_INVALID, `input is ${size} bytes; at most ${MAX_INPUT_BYTES}`);
  const input = parseOrThrow(extractionInputSchema, raw, 'input');
  const { target, maxFileBytes, maxFileRows, tables, schema } = input;
  if (maxFileBytes !== undefined || maxFileRows !== undefined) {
    const field = maxFileBytes !== undefined ? 'maxFileBytes' : 'maxFileRows';
    if (target && target.via !== 'files')
      throw new PgExtractError(ErrorCode.FILE_BOUND_INVALID, `${field}: bounds files, and --via ${target.via} writes none`, { field });
    // A set's partitions run in its copy-batch children, which write one file per range.
    if (tables !== undefined || schema !== undefined)
      throw new PgExtractError(ErrorCode.FILE_BOUND_INVALID, `${field}: batched files are for one table; a run of several tables writes one file per range`, {
        field,
      });
  }
  return input;
}

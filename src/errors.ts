/**
 * The product's one error family. Every failure we raise carries a stable `code` from
 * {@link ErrorCode}; messages are for people, codes are for programs (CLI exit hints, Temporal
 * failure types, tests). Pure module: imported by the lifecycle core, the workflow bundle and
 * the CLI alike.
 */

/**
 * What a code means to the programs that handle it. `retryable`: whether retrying the same step
 * can help (false makes the activity failure non-retryable, and a definite load failure);
 * `callersFault`: the request or its configuration is wrong; `exit`: the CLI's exit code (2 for the
 * caller's fault, else 1); `hint`: what the CLI suggests.
 */
export interface CodeInfo {
  readonly retryable: boolean;
  readonly callersFault: boolean;
  readonly exit: 1 | 2;
  readonly hint?: string;
}

/** The caller's request or configuration is wrong: retrying cannot help; the CLI exits 2. */
const CALLERS_FAULT = { retryable: false, callersFault: true, exit: 2 } as const;
/** A definite failure that is not the caller's: retrying the same step cannot help; the CLI exits 1. */
const DEFINITE = { retryable: false, callersFault: false, exit: 1 } as const;
/** A failure that may pass, or a report (not a thrown error): the CLI exits 1. */
const TRANSIENT = { retryable: true, callersFault: false, exit: 1 } as const;

/**
 * The one error table: every stable code the product emits (in errors, failure types, cleanup
 * reports, load reasons and CLI output), grouped by the layer that emits it. Codes from outside
 * (SQLSTATE_xxxxx, errno such as EACCES) pass through unchanged and count as {@link FOREIGN}.
 */
const CODES = {
  // Receipt invariants (lifecycle core).
  RECEIPT_INVALID: TRANSIENT,
  RECEIPT_TIMESTAMP_INVALID: TRANSIENT,
  RECEIPT_TIMESTAMP_NOT_UTC: TRANSIENT,
  RECEIPT_TIMESTAMP_NAIVE: TRANSIENT,
  RECEIPT_COMPLETED_BEFORE_START: TRANSIENT,
  RECEIPT_SNAPSHOT_BEFORE_START: TRANSIENT,
  RECEIPT_SNAPSHOT_AFTER_COMPLETION: TRANSIENT,
  RECEIPT_SNAPSHOT_AUTHORITY_WITHOUT_SNAPSHOT: TRANSIENT,
  RECEIPT_SNAPSHOT_WITHOUT_AUTHORITY: TRANSIENT,
  RECEIPT_SOURCE_TOKEN_EMPTY: TRANSIENT,
  RECEIPT_SOURCE_TOKEN_WITHOUT_SNAPSHOT: TRANSIENT,
  /** A receipt claims one point in time without a snapshot authority to prove it. */
  RECEIPT_POINT_IN_TIME_WITHOUT_SNAPSHOT: TRANSIENT,
  // Lifecycle authority ordering.
  EXTRACTION_NOT_STARTED: TRANSIENT,
  EXTRACTION_ALREADY_COMPLETE: TRANSIENT,
  /** A source read asked to complete before every planned range was read and receipted. */
  EXTRACTION_INCOMPLETE: TRANSIENT,
  SNAPSHOT_CHANGED: TRANSIENT,
  SOURCE_TOKEN_EMPTY: TRANSIENT,
  // Terminal decision and views.
  TERMINAL_OUTCOME_INVALID: TRANSIENT,
  TERMINAL_REBIND_AFTER_DECISION: TRANSIENT,
  VIEW_FILE_NOT_OWNED: TRANSIENT,
  // Staging guard.
  STAGING_CANCELLED: TRANSIENT,
  // Input validation (client, CLI, activity boundary).
  /** --max-file-bytes or --max-file-rows is not a usable bound (or bounds a run that writes no batched files). */
  FILE_BOUND_INVALID: { ...CALLERS_FAULT, hint: 'give sizes such as 256MB or 1GiB, rows as a whole number, for one table written to files' },
  INPUT_INVALID: CALLERS_FAULT,
  /** An option the chosen format does not take (`--gzip` or a built-in load with Parquet, a Parquet compression with CSV). */
  FORMAT_OPTIONS_INVALID: CALLERS_FAULT,
  IDENTIFIER_INVALID: { ...CALLERS_FAULT, hint: 'use schema.table; quote names with special characters as "Name"' },
  SNAPSHOT_ID_INVALID: CALLERS_FAULT,
  OUTPUT_FOLDER_OWNED: CALLERS_FAULT,
  OUTPUT_PATH_ESCAPES_ROOT: { ...CALLERS_FAULT, hint: 'pick a folder inside PG_EXTRACT_OUT_DIR' },
  /** A configured source URL whose scheme no source adapter reads (postgres:, postgresql:, mysql:, mariadb: are known), or a PostgreSQL source or target that is not a URL. */
  SOURCE_URL_UNSUPPORTED: CALLERS_FAULT,
  /** The same table appears twice in `tables`. */
  TABLE_DUPLICATE: CALLERS_FAULT,
  SOURCE_UNKNOWN: {
    ...CALLERS_FAULT,
    hint: 'set PG_EXTRACT_SOURCE_URL (or PG_EXTRACT_SOURCE_<NAME>_URL), or for a --target PG_EXTRACT_TARGET_<NAME>_URL, where the worker runs',
  },
  /** A commit report sent while the run is not awaiting one (still planning or copying). */
  NOT_AWAITING_COMMIT: CALLERS_FAULT,
  // Catalog resolution (PostgreSQL strategies).
  TABLE_NOT_FOUND: { ...CALLERS_FAULT, hint: 'check the name with \\dt in psql; unquoted names fold to lower case' },
  COLUMN_NOT_FOUND: CALLERS_FAULT,
  KEY_TYPE_UNSUPPORTED: CALLERS_FAULT,
  /** An include or exclude pattern matches no table of the schema. */
  PATTERN_UNMATCHED: CALLERS_FAULT,
  /** The schema has no ordinary or partitioned table (or does not exist), or include/exclude leave none. */
  SCHEMA_EMPTY: CALLERS_FAULT,
  /** Row security would show the source role only some of a table's rows: a copy of it would pass for the whole. */
  SOURCE_ROW_SECURITY: {
    ...CALLERS_FAULT,
    hint: "give the source role BYPASSRLS, or extract as the table's owner (unless the table forces row security)",
  },
  /** A table the run reads is unlogged (or reaches one), and the source is a hot standby, which replicates none of their rows. */
  SOURCE_UNLOGGED_ON_STANDBY: { ...CALLERS_FAULT, hint: 'extract it from the primary, or leave it out (--exclude)' },
  /** A foreign table is read, named or through a partition or a view: its wrapper reads it outside the run's snapshot. */
  SOURCE_FOREIGN_TABLE: {
    ...CALLERS_FAULT,
    hint: 'export the foreign table from its own server, or leave it out (--exclude, --tables); a materialized view of it is copied as of its last refresh',
  },
  // Target loading.
  /** The files do not match their manifest entries: loading them again cannot cure that. */
  TARGET_CHECKSUM_MISMATCH: DEFINITE,
  /** Binary files whose values a target column would read as another type (binary COPY checks no types): nothing is loaded. */
  TARGET_TYPE_MISMATCH: { ...CALLERS_FAULT, hint: 'load with --format csv (the default), or give the target columns the source types' },
  TARGET_COMMIT_AMBIGUOUS: TRANSIENT,
  TARGET_FENCE_CONFLICT: TRANSIENT,
  /** A run of several tables whose target names no table for one of them (no target.schema, no entry in target.tables), or for two at once. */
  TARGET_MAPPING_INVALID: CALLERS_FAULT,
  TARGET_NOT_SAME_DATABASE: CALLERS_FAULT,
  /** A one-table replace whose DELETE would delete or change other tables' rows through their foreign keys' ON DELETE actions. */
  TARGET_REPLACE_CASCADES: {
    ...CALLERS_FAULT,
    hint: 'load the referencing tables in the same run (a set replace empties its tables together), or load with --mode append',
  },
  /** A run of several tables with `via` internal or stream: only files load a set. */
  TARGET_VIA_UNSUPPORTED: CALLERS_FAULT,
  // Object storage (S3 API).
  S3_ACCESS_DENIED: CALLERS_FAULT,
  S3_BUCKET_NOT_FOUND: CALLERS_FAULT,
  S3_CHECKSUM_MISMATCH: TRANSIENT,
  S3_REQUEST_FAILED: TRANSIENT,
  /** The server refused the request itself (a redirect to another region, a 400): sending it again cannot help. */
  S3_REQUEST_REFUSED: { ...CALLERS_FAULT, hint: 'check AWS_REGION and the endpoint (AWS_ENDPOINT_URL_S3) against the bucket' },
  /** A file grew past what one upload holds (10 000 parts, about 776 GiB): it is refused at that byte, and the upload aborted. */
  S3_OBJECT_TOO_LARGE: { ...CALLERS_FAULT, hint: 'write smaller files: more --partitions, or --max-file-bytes' },
  /** No server answered while an attempt checked its bucket, before it wrote anything: a wrong endpoint. (A later request's is S3_REQUEST_FAILED.) */
  S3_UNREACHABLE: CALLERS_FAULT,
  /** The run's manifest, its result or a step's result would not fit in one Temporal payload (2 MB): too many files, or too long their paths. */
  RUN_EXCEEDS_PAYLOAD_LIMIT: {
    ...CALLERS_FAULT,
    hint: 'split the run (fewer tables: --include/--exclude), or write fewer files: fewer --partitions, larger --max-file-bytes/--max-file-rows, a shorter --out',
  },
  /** An output the manifest would list cannot be seen where the manifest is assembled (workers do not share the output folder). */
  OUTPUT_NOT_VISIBLE: CALLERS_FAULT,
  // Readers of a run's files (`pg-extract reader`).
  /** The run has no data package: started by an older version, or it wrote no files. */
  DATA_PACKAGE_ABSENT: DEFINITE,
  /** The engine cannot read the run's format (binary COPY). */
  READER_FORMAT_UNSUPPORTED: DEFINITE,
  /** The run's files were released (success, abort) or are missing, or its data package changed since its receipt. */
  RUN_FILES_GONE: DEFINITE,
  // Cleanup reports (`cleanupErrorCode`; errno codes such as EACCES are reported as they are).
  /** The file is not where the run wrote it, and nothing proves it was deleted (e.g. a release on a machine that does not see the run's folder). */
  FILES_NOT_VISIBLE: TRANSIENT,
  RELEASE_FAILED: TRANSIENT,
  /** The bucket accepted the delete, but the object is still there when checked. */
  S3_OBJECT_STILL_PRESENT: TRANSIENT,
  SOURCE_CLOSE_FAILED: TRANSIENT,
  // Runtime failures.
  LOCK_TIMEOUT: TRANSIENT,
  /** A session did not connect within its connect timeout (the URL's connect_timeout, PGCONNECT_TIMEOUT, or 30 s). */
  CONNECT_TIMEOUT: {
    ...TRANSIENT,
    hint: "check that the database's host and port are reachable from the worker; a slow server can be given longer with ?connect_timeout=N in its URL",
  },
  /** A server's TLS certificate was refused (its chain, name or dates) as the URL's sslmode asks: retrying cannot change it. */
  TLS_CERTIFICATE_REFUSED: {
    ...CALLERS_FAULT,
    hint: 'give the CA that signed the server as sslrootcert=/path in its URL (or PGSSLROOTCERT), connect by the name its certificate carries, or use sslmode=require to encrypt without checking it',
  },
  /** A value its column's Parquet type cannot hold without loss (±infinity dates, NaN in numeric(p,s), a nested array). */
  PARQUET_VALUE_UNREPRESENTABLE: { ...CALLERS_FAULT, hint: 'export other columns (--columns) or cast them in a view' },
  /** A row's CSV text is longer than a Parquet conversion reads (8 MiB): retrying cannot help. */
  PARQUET_ROW_TOO_LONG: { ...CALLERS_FAULT, hint: 'leave the widest columns out (--columns), or export this table as csv or binary' },
  /** A source value its column's described type cannot hold (a MySQL zero date): nothing is written as NULL. */
  SOURCE_VALUE_UNREPRESENTABLE: {
    ...CALLERS_FAULT,
    hint: "export other columns (--columns), or a view that casts the column (e.g. NULLIF(d, '0000-00-00'))",
  },
  /** The source server is older than the oldest this product reads (PostgreSQL 14). */
  SOURCE_VERSION_UNSUPPORTED: { ...CALLERS_FAULT, hint: 'upgrade the source to PostgreSQL 14 or newer (13 is out of support since November 2025)' },
  /** The source refused the configured credentials (a wrong password, a role that does not exist, a host pg_hba.conf turns away). */
  SOURCE_AUTH_FAILED: { ...CALLERS_FAULT, hint: "check the user and password in the source's URL on the worker" },
  /** The target refused the configured credentials. */
  TARGET_AUTH_FAILED: { ...CALLERS_FAULT, hint: "check the user and password in the target's URL on the worker" },
  /**
   * The exported snapshot is gone, or cannot read a table as it saw it (changed between the snapshot
   * and its lock): the step cannot be retried, but the run retries with a fresh snapshot.
   */
  SNAPSHOT_LOST: DEFINITE,
  SNAPSHOT_MISMATCH: DEFINITE,
  SOURCE_READ_FAILED: TRANSIENT,
  /**
   * A hot standby cancelled a read (or ended its session) to replay the primary's removal of rows
   * the snapshot still sees, or for a lock replay needs: SQLSTATE 40001 (40P01 for a buffer pin's
   * deadlock), told apart from a serialization failure (or deadlock) by its message.
   */
  SOURCE_RECOVERY_CONFLICT: {
    ...TRANSIENT,
    hint: 'the source is a standby replaying changes the export conflicts with: set hot_standby_feedback = on there (or raise max_standby_streaming_delay), or export from the primary',
  },
  ATTEMPTS_EXHAUSTED: {
    ...TRANSIENT,
    hint: 'the snapshot holder kept dying, or the tables kept changing as it locked them: check worker health, idle timeouts and DDL on the tables (on a standby source, hot_standby_feedback)',
  },
  // How an activity ended without a code of its own (load reasons, partition failures).
  CANCELLED: TRANSIENT,
  TIMEOUT_START_TO_CLOSE: TRANSIENT,
  TIMEOUT_SCHEDULE_TO_START: TRANSIENT,
  TIMEOUT_SCHEDULE_TO_CLOSE: TRANSIENT,
  TIMEOUT_HEARTBEAT: TRANSIENT,
  /** A workflow or activity failure that carries no type. */
  FAILED: TRANSIENT,
  // Client and CLI.
  TEMPORAL_UNREACHABLE: TRANSIENT,
  /** The run failed with no ApplicationFailure in its cause chain. */
  WORKFLOW_FAILED: TRANSIENT,
  /** An error with no code of ours or from outside. */
  ERROR: TRANSIENT,
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof CODES;

/** Every stable code by name, e.g. `ErrorCode.TABLE_NOT_FOUND`. */
export const ErrorCode = Object.fromEntries(Object.keys(CODES).map((code) => [code, code])) as { readonly [C in ErrorCode]: C };

/** What a code from outside the table means (SQLSTATE_xxxxx, errno): possibly transient, not the caller's fault. */
export const FOREIGN: CodeInfo = TRANSIENT;

/** The metadata of `code`: its table entry, or {@link FOREIGN}. */
export function codeInfo(code: string): CodeInfo {
  return Object.prototype.hasOwnProperty.call(CODES, code) ? CODES[code as ErrorCode] : FOREIGN;
}

/** Options for {@link PgExtractError}. */
export interface PgExtractErrorOptions {
  /** The input field the error is about, e.g. `table` or `partitions`. */
  field?: string;
  /** The underlying error, walked by {@link causes}. */
  cause?: unknown;
  /**
   * The attempt lets its snapshot go while its holder still holds it (a copy gave way to a
   * migration queued behind the holder's locks): the workflow asks the holder to end its read
   * now, where the holder would learn of it only at its next heartbeat.
   */
  endsHold?: boolean;
}

/**
 * Base class of every error the product raises. Thrown by the lifecycle core on invariant and
 * ordering violations, by input validation on bad input, and by strategies on catalog misses.
 */
export class PgExtractError extends Error {
  override readonly name: string = 'PgExtractError';
  readonly code: ErrorCode;
  readonly field: string | undefined;
  /** Redacted secondary failures (e.g. a failed staging drop); never replace the primary error. */
  readonly notes: string[] = [];
  /** See {@link PgExtractErrorOptions.endsHold}. */
  readonly endsHold: boolean;

  constructor(code: ErrorCode, message: string, { field, cause, endsHold = false }: PgExtractErrorOptions = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
    this.field = field;
    this.endsHold = endsHold;
  }
}

/** Codes that mean retrying the same step cannot help (the table's `retryable: false`). */
export const NON_RETRYABLE_CODES: readonly ErrorCode[] = (Object.keys(CODES) as ErrorCode[]).filter((code) => !CODES[code].retryable);

/** `err` and the errors in its cause chain, outermost first (at most 16, in case of a cycle). */
export function* causes(err: unknown): Generator<unknown> {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 16; e = (e as { cause?: unknown }).cause, depth++) yield e;
}

/** The stable code of `err` or of the first error in its cause chain that has one. */
export function errorCodeOf(err: unknown): ErrorCode | undefined {
  for (const e of causes(err)) if (e instanceof PgExtractError) return e.code;
  return undefined;
}

/** Attach a secondary failure to `primary` as a note, without replacing it. */
export function addNote(primary: unknown, note: string): void {
  if (primary instanceof PgExtractError) {
    primary.notes.push(note);
  } else if (primary && typeof primary === 'object') {
    const holder = primary as { notes?: string[] };
    holder.notes = [...(holder.notes ?? []), note];
  }
}

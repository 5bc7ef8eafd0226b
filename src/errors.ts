/**
 * The product's one error family. Every failure we raise carries a stable `code` from
 * {@link ErrorCode}; messages are for people, codes are for programs (CLI exit hints, Temporal
 * failure types, tests). Pure module: imported by the lifecycle core, the workflow bundle and
 * the CLI alike.
 */

/** Every stable code the product raises, grouped by the layer that raises it. */
export const ErrorCode = {
  // Receipt invariants (lifecycle core).
  RECEIPT_INVALID: 'RECEIPT_INVALID',
  RECEIPT_TIMESTAMP_INVALID: 'RECEIPT_TIMESTAMP_INVALID',
  RECEIPT_TIMESTAMP_NOT_UTC: 'RECEIPT_TIMESTAMP_NOT_UTC',
  RECEIPT_TIMESTAMP_NAIVE: 'RECEIPT_TIMESTAMP_NAIVE',
  RECEIPT_COMPLETED_BEFORE_START: 'RECEIPT_COMPLETED_BEFORE_START',
  RECEIPT_SNAPSHOT_BEFORE_START: 'RECEIPT_SNAPSHOT_BEFORE_START',
  RECEIPT_SNAPSHOT_AFTER_COMPLETION: 'RECEIPT_SNAPSHOT_AFTER_COMPLETION',
  RECEIPT_SNAPSHOT_AUTHORITY_WITHOUT_SNAPSHOT: 'RECEIPT_SNAPSHOT_AUTHORITY_WITHOUT_SNAPSHOT',
  RECEIPT_SNAPSHOT_WITHOUT_AUTHORITY: 'RECEIPT_SNAPSHOT_WITHOUT_AUTHORITY',
  RECEIPT_SOURCE_TOKEN_EMPTY: 'RECEIPT_SOURCE_TOKEN_EMPTY',
  RECEIPT_SOURCE_TOKEN_WITHOUT_SNAPSHOT: 'RECEIPT_SOURCE_TOKEN_WITHOUT_SNAPSHOT',
  /** A receipt claims one point in time without a snapshot authority to prove it. */
  RECEIPT_POINT_IN_TIME_WITHOUT_SNAPSHOT: 'RECEIPT_POINT_IN_TIME_WITHOUT_SNAPSHOT',
  // Lifecycle authority ordering.
  EXTRACTION_NOT_STARTED: 'EXTRACTION_NOT_STARTED',
  EXTRACTION_ALREADY_COMPLETE: 'EXTRACTION_ALREADY_COMPLETE',
  /** A source read asked to complete before every planned range was read and receipted. */
  EXTRACTION_INCOMPLETE: 'EXTRACTION_INCOMPLETE',
  SNAPSHOT_CHANGED: 'SNAPSHOT_CHANGED',
  SOURCE_TOKEN_EMPTY: 'SOURCE_TOKEN_EMPTY',
  // Terminal decision and views.
  TERMINAL_OUTCOME_INVALID: 'TERMINAL_OUTCOME_INVALID',
  TERMINAL_REBIND_AFTER_DECISION: 'TERMINAL_REBIND_AFTER_DECISION',
  VIEW_FILE_NOT_OWNED: 'VIEW_FILE_NOT_OWNED',
  // Staging guard.
  STAGING_CANCELLED: 'STAGING_CANCELLED',
  // Input validation (client, CLI, activity boundary).
  INPUT_INVALID: 'INPUT_INVALID',
  /** An option the chosen format does not take (`--gzip` or a built-in load with Parquet, a Parquet compression with CSV). */
  FORMAT_OPTIONS_INVALID: 'FORMAT_OPTIONS_INVALID',
  IDENTIFIER_INVALID: 'IDENTIFIER_INVALID',
  SNAPSHOT_ID_INVALID: 'SNAPSHOT_ID_INVALID',
  OUTPUT_FOLDER_OWNED: 'OUTPUT_FOLDER_OWNED',
  OUTPUT_PATH_ESCAPES_ROOT: 'OUTPUT_PATH_ESCAPES_ROOT',
  SOURCE_UNKNOWN: 'SOURCE_UNKNOWN',
  /** A configured source URL whose scheme no source adapter reads (postgres:, postgresql:, mysql:, mariadb: are known). */
  SOURCE_URL_UNSUPPORTED: 'SOURCE_URL_UNSUPPORTED',
  /** The same table appears twice in `tables`. */
  TABLE_DUPLICATE: 'TABLE_DUPLICATE',
  // Catalog resolution (PostgreSQL strategies).
  TABLE_NOT_FOUND: 'TABLE_NOT_FOUND',
  COLUMN_NOT_FOUND: 'COLUMN_NOT_FOUND',
  KEY_TYPE_UNSUPPORTED: 'KEY_TYPE_UNSUPPORTED',
  /** An include or exclude pattern matches no table of the schema. */
  PATTERN_UNMATCHED: 'PATTERN_UNMATCHED',
  /** The schema has no ordinary or partitioned table (or does not exist), or include/exclude leave none. */
  SCHEMA_EMPTY: 'SCHEMA_EMPTY',
  // Target loading.
  TARGET_CHECKSUM_MISMATCH: 'TARGET_CHECKSUM_MISMATCH',
  TARGET_COMMIT_AMBIGUOUS: 'TARGET_COMMIT_AMBIGUOUS',
  TARGET_FENCE_CONFLICT: 'TARGET_FENCE_CONFLICT',
  /** A run of several tables whose target names no table for one of them (no target.schema, no entry in target.tables), or for two at once. */
  TARGET_MAPPING_INVALID: 'TARGET_MAPPING_INVALID',
  TARGET_NOT_SAME_DATABASE: 'TARGET_NOT_SAME_DATABASE',
  /** A run of several tables with `via` internal or stream: only files load a set. */
  TARGET_VIA_UNSUPPORTED: 'TARGET_VIA_UNSUPPORTED',
  // Object storage (S3 API).
  S3_ACCESS_DENIED: 'S3_ACCESS_DENIED',
  S3_BUCKET_NOT_FOUND: 'S3_BUCKET_NOT_FOUND',
  S3_CHECKSUM_MISMATCH: 'S3_CHECKSUM_MISMATCH',
  S3_REQUEST_FAILED: 'S3_REQUEST_FAILED',
  S3_UNREACHABLE: 'S3_UNREACHABLE',
  /** An output the manifest would list cannot be seen where the manifest is assembled (workers do not share the output folder). */
  OUTPUT_NOT_VISIBLE: 'OUTPUT_NOT_VISIBLE',
  // Readers of a run's files (`pg-extract reader`).
  /** The run has no data package: started by an older version, or it wrote no files. */
  DATA_PACKAGE_ABSENT: 'DATA_PACKAGE_ABSENT',
  /** The engine cannot read the run's format (binary COPY). */
  READER_FORMAT_UNSUPPORTED: 'READER_FORMAT_UNSUPPORTED',
  /** The run's files were released (success, abort) or are missing. */
  RUN_FILES_GONE: 'RUN_FILES_GONE',
  // Runtime failures.
  LOCK_TIMEOUT: 'LOCK_TIMEOUT',
  /** A value its column's Parquet type cannot hold without loss (±infinity dates, NaN in numeric(p,s), a nested array). */
  PARQUET_VALUE_UNREPRESENTABLE: 'PARQUET_VALUE_UNREPRESENTABLE',
  /** The source refused the configured credentials. */
  SOURCE_AUTH_FAILED: 'SOURCE_AUTH_FAILED',
  SNAPSHOT_LOST: 'SNAPSHOT_LOST',
  SNAPSHOT_MISMATCH: 'SNAPSHOT_MISMATCH',
  SOURCE_READ_FAILED: 'SOURCE_READ_FAILED',
  ATTEMPTS_EXHAUSTED: 'ATTEMPTS_EXHAUSTED',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Options for {@link PgExtractError}. */
export interface PgExtractErrorOptions {
  /** The input field the error is about, e.g. `table` or `partitions`. */
  field?: string;
  /** The underlying error, kept for `.cause` walks. */
  cause?: unknown;
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

  constructor(code: ErrorCode, message: string, options: PgExtractErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.field = options.field;
  }
}

/** Codes that mean "the request itself is wrong": retrying it cannot help. */
export const NON_RETRYABLE_CODES: readonly ErrorCode[] = [
  ErrorCode.INPUT_INVALID,
  ErrorCode.FORMAT_OPTIONS_INVALID,
  ErrorCode.IDENTIFIER_INVALID,
  ErrorCode.SNAPSHOT_ID_INVALID,
  ErrorCode.OUTPUT_FOLDER_OWNED,
  ErrorCode.OUTPUT_PATH_ESCAPES_ROOT,
  ErrorCode.SOURCE_UNKNOWN,
  ErrorCode.SOURCE_URL_UNSUPPORTED,
  ErrorCode.SOURCE_AUTH_FAILED,
  ErrorCode.TABLE_NOT_FOUND,
  ErrorCode.COLUMN_NOT_FOUND,
  ErrorCode.KEY_TYPE_UNSUPPORTED,
  ErrorCode.PATTERN_UNMATCHED,
  ErrorCode.SCHEMA_EMPTY,
  ErrorCode.TABLE_DUPLICATE,
  ErrorCode.SNAPSHOT_LOST,
  ErrorCode.SNAPSHOT_MISMATCH,
  ErrorCode.TARGET_MAPPING_INVALID,
  ErrorCode.TARGET_NOT_SAME_DATABASE,
  ErrorCode.TARGET_VIA_UNSUPPORTED,
  ErrorCode.S3_ACCESS_DENIED,
  ErrorCode.S3_BUCKET_NOT_FOUND,
  ErrorCode.S3_UNREACHABLE,
  ErrorCode.OUTPUT_NOT_VISIBLE,
  ErrorCode.PARQUET_VALUE_UNREPRESENTABLE,
];

/** The stable code of `err` or of the first error in its `.cause` chain that has one. */
export function errorCodeOf(err: unknown): ErrorCode | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 16; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof PgExtractError) return e.code;
  }
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

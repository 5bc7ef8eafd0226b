/**
 * `s3://bucket/key` locations: parsed once, checked, and printed back the same way. Pure, so the
 * input schema (and the workflow bundle) can use it. Keys are confined like local paths: no `.` or
 * `..` segment, no empty segment, no NUL, so a run's objects stay under the prefix it was given.
 */
import { ErrorCode } from '../errors';
import { RUN_ID_PATTERN } from './identifiers';

/** A bucket and a key (or key prefix) inside it. */
export interface S3Location {
  bucket: string;
  /** Without leading or trailing `/`; '' is the bucket's root. */
  key: string;
}

const SCHEME = 's3://';
/** Bytes of any key we write (S3 allows 1024). */
const KEY_MAX_BYTES = 900;
/**
 * Bytes of an output prefix (`outDir`): a run adds at most about 230 to it, its own folder
 * (`/<runId>/attempt-N/`) and a file name (a schema and a table name made safe to 60 bytes each,
 * then `.part-NNNN`, a batch number and the extension), and every key must stay within KEY_MAX_BYTES.
 */
export const S3_PREFIX_MAX_BYTES = 640;
// S3's rules for new buckets: 3–63 of a-z 0-9 . -, starting and ending with a letter or digit.
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function isS3Url(text: string): boolean {
  return text.startsWith(SCHEME);
}

/** The length of `key` as S3 counts it: UTF-8 bytes. */
export function keyBytes(key: string): number {
  return new TextEncoder().encode(key).length;
}

/** A segment that names no object of its own but a place relative to others: empty, `.` or `..`. */
const isPathSegment = (segment: string): boolean => segment === '' || segment === '.' || segment === '..';

/** Why `key` is not a confined key, or null when it is. */
function keyProblem(key: string): string | null {
  if (key.includes('\0')) return 'contains a NUL byte';
  if (keyBytes(key) > KEY_MAX_BYTES) return `is longer than ${KEY_MAX_BYTES} bytes`;
  if (key === '') return null;
  const bad = key.split('/').find(isPathSegment);
  return bad === undefined ? null : `has a ${bad === '' ? 'empty' : `"${bad}"`} segment`;
}

/**
 * Characters a listing may not give back as written: control characters, which an XML listing
 * cannot carry (servers send U+FFFD, and a delete of that key removes nothing), U+FFFE and U+FFFF,
 * a lone surrogate (no UTF-8 at all), and `\`, which some servers store as `/`. Keys with them are
 * written, and then neither discarded nor swept: only listing finds a run's batches and uploads.
 */
const UNLISTABLE = /[\u0000-\u001f\u007f-\u009f\ufffe\uffff\\]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/u;

/** A run's folder (`<runId>/attempt-N`, the run id a UUID): what another run's release deletes whole. Told by its shape alone: S3 has no owner of a prefix to ask. */
const RUN_ATTEMPT = new RegExp(`(^|/)${RUN_ID_PATTERN}/attempt-\\d+(/|$)`, 'i');

/**
 * Why a new run may not write under prefix `key`, or null: a key no listing gives back (see
 * UNLISTABLE), or one inside another run's attempt folder, which that run's release or discard
 * deletes with everything under it (local folders are claimed by their run instead).
 */
export function newPrefixProblem(key: string): string | null {
  if (UNLISTABLE.test(key)) return 'has a control character, a backslash or a non-character, which S3 listings do not give back as written';
  if (RUN_ATTEMPT.test(key))
    return "has the shape of a run's attempt folder (<runId>/attempt-N), which a run's release deletes whole: a run writes beside one, never inside";
  return null;
}

/**
 * What is wrong with an `s3://` location, and its code: OUTPUT_PATH_ESCAPES_ROOT when its key has a
 * path segment (`..`, `.`, empty), as a path that climbs out would; else INPUT_INVALID.
 */
export class S3UrlProblem extends Error {
  constructor(
    message: string,
    readonly code: ErrorCode = ErrorCode.INPUT_INVALID,
  ) {
    super(message);
  }
}

/** Parses `s3://bucket[/prefix]`; throws an {@link S3UrlProblem} whose message says what is wrong. */
export function parseS3Url(text: string): S3Location {
  if (!isS3Url(text)) throw new S3UrlProblem('an S3 location starts with s3://');
  const rest = text.slice(SCHEME.length).replace(/\/+$/, '');
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const key = slash < 0 ? '' : rest.slice(slash + 1);
  // Never echoed: `user:secret@bucket` would put a credential in an error message, and so in history and logs.
  // A bucket name has neither: a key and a secret (which may hold a `/`, and so be here only in part) are not echoed.
  if (bucket.includes('@') || bucket.includes(':'))
    throw new S3UrlProblem('an S3 location names no credentials (key:secret@…): workers read them from their AWS_* environment');
  if (!BUCKET.test(bucket) || bucket.includes('..')) throw new S3UrlProblem(`${JSON.stringify(bucket)} is not a valid bucket name`);
  const problem = keyProblem(key);
  if (problem) throw new S3UrlProblem(`the key ${problem}`, key.split('/').some(isPathSegment) ? ErrorCode.OUTPUT_PATH_ESCAPES_ROOT : ErrorCode.INPUT_INVALID);
  return { bucket, key };
}

/** `s3://bucket/key`. */
export function formatS3Url(location: S3Location): string {
  return `${SCHEME}${location.bucket}${location.key ? `/${location.key}` : ''}`;
}

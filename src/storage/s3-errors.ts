/**
 * S3 failures as stable codes. The SDK reports a server's answer by its error name and HTTP
 * status, and a transport failure by an errno; callers (and receipts) see one of our codes and a
 * message without credentials or signed URLs.
 */
import { ErrorCode, PgExtractError } from '../errors';

interface SdkError {
  name?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
}

const DENIED = new Set(['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidToken', 'Forbidden']);
/** Answers in 4xx that a later try may not get: a lost object (404 is the caller's to read), a timeout, a conflict, throttling. */
const RETRYABLE_STATUS = new Set([404, 408, 409, 429]);
// And 400s a damaged or interrupted transfer gets, which sending again cures.
const RETRYABLE_NAMES = new Set([
  'RequestTimeout',
  'SlowDown',
  'OperationAborted',
  'IncompleteBody',
  'BadDigest',
  'XAmzContentSHA256Mismatch',
  'TokenRefreshRequired',
]);
/** No server answers at all (after the SDK's own retries). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether no server answered at all. While an attempt checks its bucket, before it writes anything,
 * that is taken for a wrong endpoint (checkBucket calls it S3_UNREACHABLE); in any later request it
 * may be a server restarting, and it is S3_REQUEST_FAILED, which Temporal retries.
 */
export function isUnreachable(err: unknown): boolean {
  const e = (err ?? {}) as SdkError;
  return (e.code !== undefined && UNREACHABLE.has(e.code)) || (e.name !== undefined && UNREACHABLE.has(e.name));
}

/** The HTTP status of a server's answer, if there was one. */
export function statusOf(err: unknown): number | undefined {
  return (err as SdkError | null)?.$metadata?.httpStatusCode;
}

/** The stable code for an S3 failure. */
export function s3ErrorCode(err: unknown): ErrorCode {
  if (err instanceof PgExtractError) return err.code;
  const e = (err ?? {}) as SdkError;
  const status = statusOf(err);
  if (e.name === 'NoSuchBucket') return ErrorCode.S3_BUCKET_NOT_FOUND;
  if ((e.name && DENIED.has(e.name)) || status === 403) return ErrorCode.S3_ACCESS_DENIED;
  // A redirect (another region) or a request the server calls malformed is refused again however often it is sent.
  if (status !== undefined && status >= 300 && status < 500 && !RETRYABLE_STATUS.has(status) && !(e.name && RETRYABLE_NAMES.has(e.name)))
    return ErrorCode.S3_REQUEST_REFUSED;
  return ErrorCode.S3_REQUEST_FAILED;
}

/** `err` as a PgExtractError with its stable code (or `code`, where the caller knows better); `what` says which request failed. */
export function s3Failure(err: unknown, what: string, code: ErrorCode = s3ErrorCode(err)): PgExtractError {
  if (err instanceof PgExtractError) return err;
  const e = (err ?? {}) as SdkError & { message?: string };
  const detail = e.name && e.name !== 'Error' ? e.name : (e.code ?? 'error');
  return new PgExtractError(code, `${what}: ${detail}${e.$metadata?.httpStatusCode ? ` (HTTP ${e.$metadata.httpStatusCode})` : ''}`, {
    cause: err,
  });
}

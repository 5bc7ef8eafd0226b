/**
 * UTC instants as ISO-8601 strings with up to microsecond precision. PostgreSQL clocks tick in
 * microseconds and JavaScript `Date` in milliseconds; keeping the string lets a server-issued
 * timestamp travel through receipts and Temporal history without losing the ordering evidence.
 */
import { ErrorCode, PgExtractError } from '../errors';

const ISO = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$/;

/** Result of checking one timestamp: the normalized `...Z` string, or the code that rejects it. */
export type UtcCheck = { ok: true; value: string } | { ok: false; code: ErrorCode; reason: string };

/** Checks and normalizes `input` (a string or a `Date`) to `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
export function checkUtcTimestamp(input: unknown): UtcCheck {
  if (input instanceof Date) {
    if (Number.isNaN(input.getTime())) return { ok: false, code: ErrorCode.RECEIPT_TIMESTAMP_INVALID, reason: 'invalid Date' };
    return { ok: true, value: input.toISOString().replace('Z', '000Z') };
  }
  if (typeof input !== 'string') return { ok: false, code: ErrorCode.RECEIPT_TIMESTAMP_INVALID, reason: 'not a timestamp' };
  const m = ISO.exec(input);
  if (!m) return { ok: false, code: ErrorCode.RECEIPT_TIMESTAMP_INVALID, reason: 'not ISO-8601' };
  const [, seconds, fraction = '', zone] = m;
  if (zone === undefined) return { ok: false, code: ErrorCode.RECEIPT_TIMESTAMP_NAIVE, reason: 'no time zone' };
  if (zone !== 'Z' && !/^[+-]00:?00$/.test(zone)) {
    return { ok: false, code: ErrorCode.RECEIPT_TIMESTAMP_NOT_UTC, reason: `offset ${zone} is not UTC` };
  }
  const ms = Date.parse(`${seconds}Z`);
  // Date.parse rolls over out-of-range fields (Feb 30); a round trip catches that.
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== seconds) {
    return { ok: false, code: ErrorCode.RECEIPT_TIMESTAMP_INVALID, reason: 'no such calendar time' };
  }
  return { ok: true, value: `${seconds}.${fraction.padEnd(6, '0').slice(0, 6)}Z` };
}

/** Normalizes or throws a {@link PgExtractError} naming `field`. */
export function toUtcTimestamp(input: unknown, field: string): string {
  const checked = checkUtcTimestamp(input);
  if (!checked.ok) throw new PgExtractError(checked.code, `${field}: ${checked.reason}`, { field });
  return checked.value;
}

/** Microseconds since the epoch of a normalized timestamp, for exact ordering. */
export function utcMicros(normalized: string): bigint {
  const seconds = Date.parse(`${normalized.slice(0, 19)}Z`) / 1000;
  return BigInt(seconds) * 1_000_000n + BigInt(normalized.slice(20, 26));
}

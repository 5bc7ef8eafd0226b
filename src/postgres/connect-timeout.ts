/**
 * How long a session may take to connect. node-postgres waits for ever unless told otherwise, and
 * reads neither libpq's `connect_timeout` URL parameter nor PGCONNECT_TIMEOUT: a host that drops
 * packets held each attempt for the kernel's SYN retries (about 2 min), and a server or proxy that
 * accepts the connection but never answers held it for good, heartbeating all the while. Here both
 * are read as libpq reads them, and a worker that is told nothing gives up after
 * {@link DEFAULT_CONNECT_TIMEOUT_S}, so the attempt fails and Temporal retries it.
 */
import { ErrorCode, PgExtractError } from '../errors';
import { urlSettings } from './connection-url';

/** Seconds to connect when neither the URL nor PGCONNECT_TIMEOUT says. */
export const DEFAULT_CONNECT_TIMEOUT_S = 30;

/** libpq takes any C int: INT_MIN to INT_MAX seconds. */
const MIN_CONNECT_TIMEOUT_S = -(2 ** 31);
const MAX_CONNECT_TIMEOUT_S = 2 ** 31 - 1;
/** The longest delay a Node timer keeps (2³¹−1 ms, about 24.8 days): a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The connect timeout in milliseconds for `url`, 0 for none: the URL's `connect_timeout` (read by
 * pg's own URL parser, so `?host=` sockets and the like read as pg reads them), else
 * PGCONNECT_TIMEOUT (an empty one counts as unset), else the default. As in libpq: whole seconds,
 * 0 or less waits for ever, 1 means 2, and a value that is not a whole number or not a C int is
 * refused (INPUT_INVALID). A timeout longer than a Node timer keeps waits for ever too.
 */
export function connectTimeoutMs(url: string, env: NodeJS.ProcessEnv = process.env): number {
  const fromUrl = urlSettings(url).connect_timeout;
  const [text, where] =
    typeof fromUrl === 'string' ? [fromUrl, 'connect_timeout in the database URL'] : [env.PGCONNECT_TIMEOUT || undefined, 'PGCONNECT_TIMEOUT'];
  if (text === undefined) return DEFAULT_CONNECT_TIMEOUT_S * 1000;
  const seconds = /^\s*[+-]?\d+\s*$/.test(text) ? Number(text) : NaN;
  if (!(seconds >= MIN_CONNECT_TIMEOUT_S && seconds <= MAX_CONNECT_TIMEOUT_S)) {
    throw new PgExtractError(
      ErrorCode.INPUT_INVALID,
      `${where} must be a whole number of seconds from ${MIN_CONNECT_TIMEOUT_S} to ${MAX_CONNECT_TIMEOUT_S}, not ${JSON.stringify(text)}`,
      {
        field: 'connect_timeout',
      },
    );
  }
  const ms = Math.max(seconds, 2) * 1000;
  return seconds <= 0 || ms > MAX_TIMER_MS ? 0 : ms;
}

/**
 * The error for a session that did not connect within `ms`, naming where pg dialled (its host and
 * port, an IPv6 host in brackets, or its socket's path), never the URL, which may hold a password.
 */
export function connectTimedOut(host: string, port: number, ms: number, cause: unknown): PgExtractError {
  const where = host.startsWith('/') ? `${host}/.s.PGSQL.${port}` : host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new PgExtractError(ErrorCode.CONNECT_TIMEOUT, `could not connect to ${where} within ${ms / 1000} s (connect_timeout)`, { cause });
}

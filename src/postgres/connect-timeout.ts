/**
 * How long a session may take to connect. node-postgres waits for ever unless told otherwise, and
 * reads neither libpq's `connect_timeout` URL parameter nor PGCONNECT_TIMEOUT: a host that drops
 * packets held each attempt for the kernel's SYN retries (about 2 min), and a server or proxy that
 * accepts the connection but never answers held it for good, heartbeating all the while. Here both
 * are read as libpq reads them, and a worker that is told nothing gives up after
 * {@link DEFAULT_CONNECT_TIMEOUT_S}, so the attempt fails and Temporal retries it.
 */
import { ErrorCode, PgExtractError } from '../errors';

/** Seconds to connect when neither the URL nor PGCONNECT_TIMEOUT says. */
export const DEFAULT_CONNECT_TIMEOUT_S = 30;

/**
 * The connect timeout in milliseconds for `url`, 0 for none: the URL's `connect_timeout`, else
 * PGCONNECT_TIMEOUT, else the default. As in libpq: whole seconds, 0 or less waits for ever, and 1
 * means 2. A value that is not a whole number is refused (INPUT_INVALID), as libpq refuses it.
 */
export function connectTimeoutMs(url: string, env: NodeJS.ProcessEnv = process.env): number {
  const fromUrl = urlParameter(url, 'connect_timeout');
  const [text, where] = fromUrl !== null ? [fromUrl, 'connect_timeout in the database URL'] : [env.PGCONNECT_TIMEOUT, 'PGCONNECT_TIMEOUT'];
  if (text === undefined || text === '') return DEFAULT_CONNECT_TIMEOUT_S * 1000;
  if (!/^\s*[+-]?\d+\s*$/.test(text)) {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `${where} must be a whole number of seconds, not ${JSON.stringify(text)}`, { field: 'connect_timeout' });
  }
  const seconds = Number(text);
  return seconds <= 0 ? 0 : Math.max(seconds, 2) * 1000;
}

/** A query parameter of a `postgres://` URL; null when absent or when the text is not a URL (pg reports that itself). */
function urlParameter(url: string, name: string): string | null {
  try {
    return new URL(url).searchParams.get(name);
  } catch {
    return null;
  }
}

/** The error for a session that did not connect within `ms`, naming the host (never the URL, which may hold a password). */
export function connectTimedOut(url: string, ms: number, cause: unknown): PgExtractError {
  let host = 'the database';
  try {
    host = new URL(url).host || host;
  } catch {
    // Not a URL: pg would have refused it before any timeout.
  }
  return new PgExtractError(ErrorCode.CONNECT_TIMEOUT, `could not connect to ${host} within ${ms / 1000} s (connect_timeout)`, { cause });
}

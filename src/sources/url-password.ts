/**
 * A database URL whose password was not percent-encoded. A URL's host ends at the first / ? or #,
 * so a password's @ before one of them made the rest of the password the host (`p@ss/word`
 * dialled "ss"), and every error of the run named it: in its failure, its history and the worker's
 * log, where no redaction can tell it from a host. A password's ? made the rest of it the query
 * (`pa?ss@host` read "pa" as a port: "Invalid URL", uncoded; `12?ss@host` dialled port 12). Pure.
 */
import { ErrorCode, PgExtractError } from '../errors';

const ENCODE = "percent-encode a password's @ / ? # % and spaces (encodeURIComponent), e.g. p%40ss%2Fword";

/**
 * Refuses `url` (scheme://…) with SOURCE_URL_UNSUPPORTED when an @ follows its host in the path or a
 * # part (database URLs have no # part, and a database name's @ is written %40), in the name of its
 * query's first parameter, or anywhere in a query that follows a host with no user and no database
 * (`u:12?x=cret@h/dw`). A parameter's value may hold one after a database or a user
 * (`/db?application_name=me@corp`).
 */
export function requireEncodedPassword(url: string): void {
  const head = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/is.exec(url);
  const authority = head?.[1] ?? '';
  const afterHost = url.slice(head?.[0].length ?? 0);
  const firstParameter = (/^[^?#]*\?([^#&]*)/.exec(afterHost)?.[1] ?? '').split('=')[0]!;
  const queryAfterBareHost = !authority.includes('@') && afterHost.startsWith('?') && afterHost.includes('@');
  if (afterHost.replace(/\?[^#]*/, '').includes('@') || firstParameter.includes('@') || queryAfterBareHost) {
    throw new PgExtractError(ErrorCode.SOURCE_URL_UNSUPPORTED, `the database URL has an @ after its host: ${ENCODE}`, { field: 'url' });
  }
}

/**
 * `read()`, a parser of a database URL, with its failure to read one at all ("Invalid URL", which
 * says nothing more: a password's ? or # before a port that is not one) as SOURCE_URL_UNSUPPORTED.
 */
export function readingUrl<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_INVALID_URL') throw err;
    throw new PgExtractError(ErrorCode.SOURCE_URL_UNSUPPORTED, `the database URL does not read as a URL: ${ENCODE}`, { field: 'url' });
  }
}

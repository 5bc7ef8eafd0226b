/**
 * A database URL whose password was not percent-encoded. A URL's host ends at the first / ? or #,
 * so a password's @ before one of them made the rest of the password the host (`p@ss/word`
 * dialled "ss"), and every error of the run named it: in its failure, its history and the worker's
 * log, where no redaction can tell it from a host. Pure.
 */
import { ErrorCode, PgExtractError } from '../errors';

/**
 * Refuses `url` (scheme://…) with SOURCE_URL_UNSUPPORTED when an @ follows its host in the path or a
 * # part: database URLs have no # part, and a database name's @ is written %40. One in the query may
 * be a value's, and is left alone.
 */
export function requireEncodedPassword(url: string): void {
  const afterHost = url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/is, '');
  if (afterHost.replace(/\?[^#]*/, '').includes('@')) {
    throw new PgExtractError(
      ErrorCode.SOURCE_URL_UNSUPPORTED,
      "the database URL has an @ after its host: percent-encode a password's @ / ? # % and spaces (encodeURIComponent), e.g. p%40ss%2Fword",
      { field: 'url' },
    );
  }
}

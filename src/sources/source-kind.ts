/**
 * Which adapter reads a configured source: the URL's scheme decides, and an unknown one is
 * refused before anything opens. No scheme at all is PostgreSQL's, whose URL reader refuses what
 * it cannot read (a libpq keyword/value string; postgres/connection-url.ts).
 */
import { ErrorCode, PgExtractError } from '../errors';
import type { SourceKind } from './source-adapter';

const SCHEMES: Record<string, SourceKind> = {
  'postgres:': 'postgresql',
  'postgresql:': 'postgresql',
  'mysql:': 'mysql',
  'mariadb:': 'mysql',
};

export function sourceKindOf(url: string): SourceKind {
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].toLowerCase();
  if (scheme === undefined) return 'postgresql';
  const kind = Object.hasOwn(SCHEMES, scheme) ? SCHEMES[scheme] : undefined;
  if (!kind) {
    throw new PgExtractError(ErrorCode.SOURCE_URL_UNSUPPORTED, `no source adapter reads ${scheme}// URLs (known: ${Object.keys(SCHEMES).join(' ')})`, {
      field: 'source',
    });
  }
  return kind;
}

/**
 * Source token digests. A server-issued snapshot token proves which snapshot was read; receipts
 * publish only its digest. The raw token does reach workflow history when it is an exported
 * snapshot id (the partitions' activity inputs carry it): that id is not a credential and dies with
 * its transaction.
 */
import { createHash } from 'node:crypto';
import { ErrorCode, PgExtractError } from '../errors';

/** `sha256:` + lowercase hex sha256 of the raw token's UTF-8 bytes. */
export function digestSourceToken(rawToken: string): string {
  if (rawToken.trim() === '') throw new PgExtractError(ErrorCode.SOURCE_TOKEN_EMPTY, 'source token is empty');
  return `sha256:${createHash('sha256').update(rawToken, 'utf8').digest('hex')}`;
}

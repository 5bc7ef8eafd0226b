/**
 * Renders a planned partition range as a WHERE clause: quoted key, literal boundaries cast to the
 * key's type and, for text keys, compared under the column's collation (the order the planner's
 * quantiles were sorted in).
 */
import { ErrorCode, PgExtractError } from '../errors';
import type { SplitKey } from '../contract/partition-range';
import type { PartitionRange } from '../contract/partition-range';
import { quoteIdent, quoteLiteral, quoteQualified } from './sql';

const PAGE = /^\d+$/;

/** The WHERE clause for `range`, or undefined for every row. */
export function rangePredicate(range: PartitionRange, key: SplitKey | null): string | undefined {
  switch (range.kind) {
    case 'all':
      return undefined;
    case 'pages': {
      const from = `ctid >= '(${pageNumber(range.fromPage)},0)'::tid`;
      return range.toPage === null ? from : `${from} AND ctid < '(${pageNumber(range.toPage)},0)'::tid`;
    }
    case 'nulls':
      return `${quoteIdent(requireKey(key).name)} IS NULL`;
    case 'key': {
      const k = requireKey(key);
      const parts = [range.lower === null ? null : keyBound(k, '>=', range.lower), range.upper === null ? null : keyBound(k, '<', range.upper)].filter(
        (p): p is string => p !== null,
      );
      return parts.length ? parts.join(' AND ') : `${quoteIdent(k.name)} IS NOT NULL`;
    }
  }
}

/**
 * ` COLLATE "schema"."collation"`: a text key's collation as the plan recorded it, which the bounds are
 * compared under and the cuts sorted under, whatever the column's collation is by then; else nothing.
 */
export function keyCollate(key: SplitKey): string {
  return key.collation ? ` COLLATE ${quoteQualified(key.collation.schema, key.collation.name)}` : '';
}

/** `"key" op 'value'::type [COLLATE "schema"."collation"]`. */
export function keyBound(key: SplitKey, op: '<' | '<=' | '>' | '>=', value: string): string {
  return `${quoteIdent(key.name)} ${op} ${quoteLiteral(value)}::${key.sqlType}${keyCollate(key)}`;
}

function pageNumber(page: number): string {
  const text = String(page);
  if (!PAGE.test(text)) throw new PgExtractError(ErrorCode.INPUT_INVALID, `bad page number ${text}`);
  return text;
}

function requireKey(key: SplitKey | null): SplitKey {
  if (!key) throw new PgExtractError(ErrorCode.INPUT_INVALID, 'a key range needs a split key');
  return key;
}

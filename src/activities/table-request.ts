/** Turns validated workflow input into a catalog request (names parsed, never trusted as SQL). */
import type { TableRequest } from '../postgres/catalog';
import { parseColumnName, parseTableName } from '../contract/identifiers';
import type { ExtractionInput } from '../contract/extraction-input';

export function tableRequestOf(input: ExtractionInput): TableRequest {
  return {
    ...parseTableName(input.table),
    columns: input.columns?.map((c) => parseColumnName(c, 'columns')),
    key: input.key === undefined ? undefined : parseColumnName(input.key, 'key'),
  };
}

/** Turns validated workflow input into a catalog request (names parsed, never trusted as SQL). */
import type { TableRequest } from '../postgres/catalog';
import type { TableSelection } from '../postgres/table-set';
import { parseColumnName, parseSchemaName, parseTableName } from '../contract/identifiers';
import type { ExtractionInput } from '../contract/extraction-input';
import { singleTable } from '../contract/table-selection';

export function tableRequestOf(input: ExtractionInput): TableRequest {
  return {
    ...parseTableName(singleTable(input)),
    columns: input.columns?.map((c) => parseColumnName(c, 'columns')),
    key: input.key === undefined ? undefined : parseColumnName(input.key, 'key'),
  };
}

/** The set of tables a `tables` or `schema` run names, names parsed (the catalog resolves them). */
export function tableSelectionOf(input: ExtractionInput): TableSelection {
  if (input.schema !== undefined) return { schema: parseSchemaName(input.schema, 'schema'), include: input.include, exclude: input.exclude };
  return { tables: (input.tables ?? []).map((t) => parseTableName(t, 'tables')) };
}

/**
 * Registers the search attributes the workflow upserts, when the namespace lacks them, so a
 * worker runs against a bare `temporal server start-dev`.
 */
import type { Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { SearchAttributes } from '../contract/definitions';

const INDEXED: Partial<Record<SearchAttributeType, temporal.api.enums.v1.IndexedValueType>> = {
  [SearchAttributeType.KEYWORD]: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  [SearchAttributeType.INT]: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
};

export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set([...Object.keys(existing.customAttributes ?? {}), ...Object.keys(existing.systemAttributes ?? {})]);
  const missing = Object.values(SearchAttributes).filter((k) => !known.has(k.name));
  if (missing.length > 0) {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, INDEXED[k.type]!])),
    });
  }
  return missing.map((k) => k.name);
}

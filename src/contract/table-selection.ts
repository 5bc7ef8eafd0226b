/**
 * Which tables a run names: one (`table`), a list (`tables`), or a schema narrowed by glob
 * patterns. Pure: the workflow, the client and the holder all read the input the same way.
 */
import { ErrorCode, PgExtractError } from '../errors';
import type { ExtractionInput } from './extraction-input';

/** Whether the run exports a set of tables (a list or a schema) at one snapshot, not one table. */
export function isTableSet(input: Pick<ExtractionInput, 'tables' | 'schema'>): boolean {
  return input.tables !== undefined || input.schema !== undefined;
}

/** How status, search attributes and workflow ids name the run's tables. */
export function runLabel(input: Pick<ExtractionInput, 'table' | 'tables' | 'schema'>): string {
  if (input.table !== undefined) return input.table;
  if (input.schema !== undefined) return `${input.schema}.*`;
  const tables = input.tables ?? [];
  return tables.length === 1 ? tables[0]! : `${tables[0]} and ${tables.length - 1} more`;
}

/**
 * The input of one table of a set, as its partitions see it: the single-table input they
 * already validate, without the set (which would travel in history once per partition).
 */
export function tableInput(input: ExtractionInput, table: string): ExtractionInput {
  return { ...withoutTables(input), table };
}

/** The input without its tables (and target): what every table of a set shares. */
export function withoutTables(input: ExtractionInput): ExtractionInput {
  const { table: _table, tables: _tables, schema: _schema, include: _include, exclude: _exclude, target: _target, ...rest } = input;
  return rest;
}

/** A glob on table names: `*` any run of characters, `?` one character, everything else literal. */
export function globMatcher(pattern: string): (name: string) => boolean {
  const source = [...pattern].map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[\\^$.|+()[\]{}]/g, '\\$&'))).join('');
  // `u`: `?` is one code point, as the pattern was split, not one half of a character outside the BMP.
  const re = new RegExp(`^${source}$`, 'su');
  return (name) => re.test(name);
}

/** The one table of a single-table run; the single-table strategies call it, never a set's run. */
export function singleTable(input: Pick<ExtractionInput, 'table'>): string {
  if (input.table === undefined) throw new PgExtractError(ErrorCode.INPUT_INVALID, 'this step takes one table; the run names several', { field: 'table' });
  return input.table;
}

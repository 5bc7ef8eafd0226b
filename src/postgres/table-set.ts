/**
 * A set of tables inside one exported snapshot: which tables a list or a schema (with include /
 * exclude globs) names, and how each is split. Sizes come from pg_table_size (heap, TOAST, free
 * space and visibility maps) over a partitioned table's leaves, never from COUNT(*): big tables
 * are split into ranges, small ones are one file, and the biggest come first so the tail is short.
 */
import type { ClientBase } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import { MAX_TABLES } from '../contract/extraction-input';
import { globMatcher } from '../contract/table-selection';
import { type ResolveOptions, type ResolvedTable, resolveTables } from './catalog';
import type { PartitionRange } from '../contract/partition-range';
import { quoteQualified } from './sql';

/** The tables a run names, as parsed from its input (not yet trusted). */
export type TableSelection = { tables: { schema: string; table: string }[] } | { schema: string; include?: string[]; exclude?: string[] };

/** One table of the set and its ranges. */
export interface TablePlan {
  table: ResolvedTable;
  /** pg_table_size over the table (or its leaf partitions) when planned. */
  bytes: number;
  ranges: PartitionRange[];
}

/** A table this size or more is split: about one partition per this many bytes. */
export const SPLIT_BYTES = 64 * 1024 * 1024;

/** Resolves every named table (views and materialized views too), or a schema's ordinary and partitioned tables. */
export async function resolveTableSet(client: ClientBase, selection: TableSelection, options: ResolveOptions = {}): Promise<ResolvedTable[]> {
  if (!('tables' in selection)) return resolveTables(client, await schemaTables(client, selection), options);
  const tables = await resolveTables(client, selection.tables, options);
  await refusePartitionsOfListed(client, tables);
  return tables;
}

/**
 * TABLE_DUPLICATE when a list names a partitioned table and one of its partitions (at any depth):
 * the parent's read takes its partitions' rows, so they would be read, and loaded, twice. (A
 * table's inheritance children are not read with it: `FROM ONLY`, catalog.ts fromItem.)
 */
async function refusePartitionsOfListed(client: ClientBase, tables: readonly ResolvedTable[]): Promise<void> {
  if (!tables.some((t) => t.relkind === 'p')) return;
  const r = await client.query<{ partition: string; parent: string }>(
    `WITH RECURSIVE listed AS (
       SELECT c.oid, pg_catalog.format('%I.%I', t.schema, t.name) AS label, c.relispartition
         FROM unnest($1::text[], $2::text[]) AS t(schema, name)
         JOIN pg_catalog.pg_namespace n ON n.nspname = t.schema
         JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.name),
     up(oid, ancestor) AS (
       SELECT l.oid, i.inhparent FROM listed l JOIN pg_catalog.pg_inherits i ON i.inhrelid = l.oid AND NOT i.inhdetachpending WHERE l.relispartition
       UNION
       SELECT up.oid, i.inhparent FROM up
         JOIN pg_catalog.pg_class c ON c.oid = up.ancestor AND c.relispartition
         JOIN pg_catalog.pg_inherits i ON i.inhrelid = up.ancestor AND NOT i.inhdetachpending)
     SELECT p.label AS partition, a.label AS parent FROM up JOIN listed p ON p.oid = up.oid JOIN listed a ON a.oid = up.ancestor
      ORDER BY 1, 2`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  const first = r.rows[0];
  if (first) {
    throw new PgExtractError(
      ErrorCode.TABLE_DUPLICATE,
      `${first.partition} is a partition of ${first.parent}, which the list also names: its rows would be read twice (name the parent or its partitions)`,
      { field: 'tables' },
    );
  }
}

async function schemaTables(
  client: ClientBase,
  selection: { schema: string; include?: string[]; exclude?: string[] },
): Promise<{ schema: string; table: string }[]> {
  // Partitions are read through their parent; relispartition keeps them from being read twice.
  const r = await client.query<{ name: string; partition: boolean }>(
    `SELECT c.relname AS name, c.relispartition AS partition
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')
      ORDER BY c.relname`,
    [selection.schema],
  );
  const all = r.rows.filter((row) => !row.partition).map((row) => row.name);
  if (all.length === 0) {
    const partitions = r.rows.length;
    throw new PgExtractError(
      ErrorCode.SCHEMA_EMPTY,
      partitions > 0
        ? `schema ${selection.schema} holds only partitions (${partitions}) of tables in other schemas: export those tables, which read their partitions`
        : `schema ${selection.schema} has no tables (or does not exist, or is not readable)`,
      { field: 'schema' },
    );
  }
  const matchers = (field: 'include' | 'exclude') =>
    (selection[field] ?? []).map((pattern) => {
      const matches = globMatcher(pattern);
      if (!all.some(matches))
        throw new PgExtractError(ErrorCode.PATTERN_UNMATCHED, `${field} pattern ${JSON.stringify(pattern)} matches no table in ${selection.schema}`, { field });
      return matches;
    });
  const include = matchers('include');
  const exclude = matchers('exclude');
  const kept = all.filter((name) => (include.length === 0 || include.some((m) => m(name))) && !exclude.some((m) => m(name)));
  if (kept.length === 0) throw new PgExtractError(ErrorCode.SCHEMA_EMPTY, `include and exclude leave no table of ${selection.schema}`, { field: 'exclude' });
  if (kept.length > MAX_TABLES) {
    throw new PgExtractError(
      ErrorCode.INPUT_INVALID,
      `${selection.schema} has ${kept.length} tables; one run takes at most ${MAX_TABLES} (narrow it with include/exclude)`,
      { field: 'schema' },
    );
  }
  return kept.map((table) => ({ schema: selection.schema, table }));
}

/** Each table's size in bytes, in the order given: one catalog query for the whole set. */
export async function tableSizes(client: ClientBase, tables: readonly ResolvedTable[]): Promise<number[]> {
  const r = await client.query<{ bytes: string }>(
    `SELECT (CASE WHEN c.relkind = 'p'
                  THEN (SELECT coalesce(sum(pg_catalog.pg_table_size(t.relid)), 0) FROM pg_catalog.pg_partition_tree(c.oid) t WHERE t.isleaf)
                  ELSE coalesce(pg_catalog.pg_table_size(c.oid), 0) END)::text AS bytes
       FROM unnest($1::text[]) WITH ORDINALITY AS r(rel, n) JOIN pg_catalog.pg_class c ON c.oid = r.rel::regclass
      ORDER BY r.n`,
    [tables.map((t) => quoteQualified(t.schema, t.table))],
  );
  return r.rows.map((row) => Number(row.bytes));
}

/** How many partitions a table of `bytes` gets: one per SPLIT_BYTES, at least 1, at most `max`. */
export function partitionsBySize(bytes: number, max: number): number {
  return Math.max(1, Math.min(max, Math.ceil(bytes / SPLIT_BYTES)));
}

/** Biggest first (ties by name), so the largest tables start first and the run's tail is short. */
export function biggestFirst(plans: TablePlan[]): TablePlan[] {
  const name = (p: TablePlan) => `${p.table.schema}.${p.table.table}`;
  return [...plans].sort((a, b) => b.bytes - a.bytes || (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0));
}

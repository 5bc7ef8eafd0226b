/**
 * Sizing a table's partition ranges inside the coordinator's snapshot: how many (a fixed count, or
 * `auto` from the rows planned for), and where to cut them: key ranges at quantiles of the split
 * key (ANALYZE's histogram when it still describes the table, else a sample), else ctid page
 * ranges. Only how even the ranges are depends on these estimates: the ranges are open-ended, so
 * coverage never does.
 */
import type { ClientBase } from 'pg';
import { type ResolvedTable, fromItem } from './catalog';
import { AUTO_MAX_PARTITIONS, AUTO_TARGET_ROWS, type KeyBounds, autoPartitionCount, planKeyRanges, planPageRanges } from '../planning/range-planner';
import type { PartitionRange, SplitKey } from '../contract/partition-range';
import { quoteIdent, quoteLiteral, quoteQualified } from './sql';
import { keyCollate } from './range-predicate';

/** How many partitions to plan. */
export interface PlanningOptions {
  /** A fixed count, or `auto` (rows / targetRows, at most maxPartitions). */
  partitions: number | 'auto';
  /** @default AUTO_TARGET_ROWS */
  targetRowsPerPartition?: number;
  /** @default AUTO_MAX_PARTITIONS */
  maxPartitions?: number;
}

/**
 * Rows to sample for n partitions (a table with no more rows is read whole). TABLESAMPLE SYSTEM
 * draws whole pages, so the independent draws are pages (tens of rows each for typical rows):
 * 150 000 rows are a few thousand pages, enough for every boundary of up to 15 partitions to be
 * within a few per cent (more partitions take 10 000 rows each). Sorting the sample is the
 * planner's main cost (500 000 rows took 63 ms on 2 M), and one size for `auto`'s 1 to 16
 * partitions keeps planning flat in table size: `auto` takes more partitions for a bigger table.
 */
const sampleRows = (n: number): number => Math.min(500_000, Math.max(150_000, 10_000 * n));

/** The ranges of one table: key ranges (balanced by sampled quantiles), else ctid page ranges (a partitioned table's over its leaves). */
export async function planRanges(
  client: ClientBase,
  table: ResolvedTable,
  planning: PlanningOptions,
): Promise<{ ranges: PartitionRange[]; rowCount: number | null }> {
  const relation = quoteQualified(table.schema, table.table);
  const from = fromItem(table);
  const auto = planning.partitions === 'auto';
  const wanted = (rows: number | null): number =>
    planning.partitions === 'auto'
      ? autoPartitionCount(rows ?? 0, { targetRows: planning.targetRowsPerPartition ?? AUTO_TARGET_ROWS, max: planning.maxPartitions ?? AUTO_MAX_PARTITIONS })
      : planning.partitions;
  // `auto` sizes the plan by an estimate, never a COUNT(*): planning stays flat in table size.
  const rows = auto ? await plannedRows(client, relation, table.relkind) : null;
  if (table.key) {
    const key = quoteIdent(table.key.name);
    // Sorted under the collation the plan records and the bounds are compared under (keyCollate): the column's own
    // when the snapshot was taken; one changed in place since would otherwise sort the cuts out of their order.
    const ordered = `${key}${keyCollate(table.key)}`;
    // MIN and MAX are index probes (ORDER BY … LIMIT 1 works for every key type; uuid has no min()),
    // ordered by the key's own collation, and "any NULL?" is a probe too.
    const end = (direction: 'ASC' | 'DESC') => `(SELECT ${key} FROM ${from} WHERE ${key} IS NOT NULL ORDER BY ${ordered} ${direction} LIMIT 1)::text`;
    const b = await client.query<{ min: string | null; max: string | null; has_nulls: boolean }>(
      `SELECT ${end('ASC')} AS min, ${end('DESC')} AS max, EXISTS (SELECT 1 FROM ${from} WHERE ${key} IS NULL) AS has_nulls`,
    );
    const row = b.rows[0]!;
    const bounds: KeyBounds = { kind: table.key.kind, min: row.min, max: row.max, rowCount: rows, hasNulls: row.has_nulls };
    const n = wanted(bounds.rowCount);
    if (n > 1 && bounds.min !== null && bounds.min !== bounds.max) {
      bounds.quantiles =
        (await statisticsQuantiles(client, table, table.key, n)) ??
        (await sampleQuantiles(client, from, table.relkind, key, ordered, n, bounds.rowCount ?? (await plannedRows(client, relation, table.relkind))));
    }
    return { ranges: planKeyRanges(bounds, n), rowCount: bounds.rowCount };
  }
  if (table.relkind === 'r' || table.relkind === 'm' || table.relkind === 'p') {
    // A partitioned table's ctid ranges apply to each of its leaves (a TID range scan each): they cover its
    // largest leaf's pages, the last range open.
    const pages = table.relkind === 'p' ? await largestLeafPages(client, relation) : await heapPages(client, relation);
    return { ranges: rows === 0 || pages === 0 ? [{ kind: 'all' }] : planPageRanges(pages, wanted(rows)), rowCount: rows };
  }
  return { ranges: [{ kind: 'all' }], rowCount: null };
}

/** The pages of the largest leaf partition of partitioned table `relation`. */
async function largestLeafPages(client: ClientBase, relation: string): Promise<number> {
  const r = await client.query<{ pages: string }>(
    `SELECT coalesce(max(pg_relation_size(t.relid) / current_setting('block_size')::int), 0)::text AS pages
       FROM pg_partition_tree(${quoteLiteral(relation)}::regclass) t WHERE t.isleaf`,
  );
  return Number(r.rows[0]!.pages);
}

/** Tables up to this many pages (10 MiB) are counted exactly: cheap, and small tables plan exactly. */
const COUNT_UP_TO_PAGES = 1280;
/** Pages a sampled estimate reads when the table has no statistics yet (a few per cent of error). */
const ESTIMATE_SAMPLE_PAGES = 300;
/** Rows per 8 KiB page assumed for a leaf that has no statistics and that the role may not read (rows of about 120 bytes). */
const GUESSED_ROWS_PER_PAGE = 60;

async function heapPages(client: ClientBase, relation: string): Promise<number> {
  const r = await client.query<{ pages: string }>(
    `SELECT (pg_relation_size(${quoteLiteral(relation)}::regclass) / current_setting('block_size')::int)::text AS pages`,
  );
  return Number(r.rows[0]!.pages);
}

/**
 * The rows to plan for, without reading the whole table: an exact COUNT(*) up to 10 MiB; above,
 * the statistics' density (reltuples / relpages, as PostgreSQL's own planner scales it) times the
 * pages the table has now; without statistics (never vacuumed or analyzed), a count over a
 * TABLESAMPLE SYSTEM of about 300 pages. A partitioned table adds up its leaf partitions; a leaf
 * the role may not read itself (it reads them through the parent, whose rights are the ones
 * checked) is estimated from its statistics alone, else at {@link GUESSED_ROWS_PER_PAGE}. Only
 * the partition count depends on it: ranges are open-ended, so coverage never does.
 */
async function plannedRows(client: ClientBase, relation: string, relkind: string): Promise<number> {
  const leaves =
    relkind === 'p'
      ? `SELECT relid FROM pg_partition_tree(${quoteLiteral(relation)}::regclass) WHERE isleaf`
      : `SELECT ${quoteLiteral(relation)}::regclass AS relid`;
  const stats = await client.query<{ schema: string; name: string; reltuples: number; relpages: number; pages: string; readable: boolean }>(
    `SELECT n.nspname AS schema, c.relname AS name, c.reltuples::float8 AS reltuples, c.relpages,
            (pg_relation_size(c.oid) / current_setting('block_size')::int)::text AS pages,
            pg_catalog.has_any_column_privilege(c.oid, 'SELECT') AS readable
       FROM (${leaves}) l JOIN pg_class c ON c.oid = l.relid JOIN pg_namespace n ON n.oid = c.relnamespace`,
  );
  let total = 0;
  for (const leaf of stats.rows) {
    const pages = Number(leaf.pages);
    // ONLY: a leaf's own rows, as the copy reads them (catalog.ts fromItem); a partition has no children.
    const from = `ONLY ${quoteQualified(leaf.schema, leaf.name)}`;
    if (!leaf.readable) {
      total += leaf.reltuples >= 0 && leaf.relpages > 0 ? Math.round((leaf.reltuples / leaf.relpages) * pages) : pages * GUESSED_ROWS_PER_PAGE;
    } else if (pages <= COUNT_UP_TO_PAGES) {
      total += Number((await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${from}`)).rows[0]!.n);
    } else if (leaf.reltuples >= 0 && leaf.relpages > 0) {
      total += Math.round((leaf.reltuples / leaf.relpages) * pages);
    } else {
      const percent = Math.min(100, (100 * ESTIMATE_SAMPLE_PAGES) / pages);
      const sampled = await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${from} TABLESAMPLE SYSTEM (${percent.toFixed(4)}) REPEATABLE (42)`);
      total += Math.round((Number(sampled.rows[0]!.n) * 100) / percent);
    }
  }
  return total;
}

/** The share of a table that may have changed since ANALYZE for its histogram still to place the cuts. */
const STATISTICS_STALE_FRACTION = 0.1;
/** SQLSTATE 42501: a view or function this role may not use. */
const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * n-1 quantiles of the key from ANALYZE's histogram (equal shares of the rows between bounds), so
 * planning reads no rows beyond the key's MIN/MAX probes: a page sample is thousands of scattered
 * page reads, from the OS cache at best and from disk on a cold 100 M-row table. Null when the
 * statistics may not describe the table as it is now, and the caller samples instead:
 * - a text key: its histogram was sorted under the collation as it was at ANALYZE, and only cuts in
 *   the server's order now keep the ranges disjoint (other kinds are ordered by the planner itself);
 * - no histogram: never analyzed, a partitioned table, or no SELECT on the column (pg_stats hides it);
 * - not a plain table or materialized view (a table with inheritance children is read ONLY, its
 *   own rows, which the statistics without `inherited` describe);
 * - most-common values: the histogram leaves them out, so its buckets are not equal shares;
 * - fewer buckets than partitions;
 * - more than a tenth of the table changed since, as far as PostgreSQL tells: its pages now against
 *   relpages (which VACUUM also updates), rows modified since ANALYZE against reltuples (counts a
 *   session reports when it goes idle, after seconds at most; none on a standby);
 * - the statistics views refused to this role (a revoked grant).
 * Statistics only balance the ranges: the ranges are open-ended and their cuts strictly increasing,
 * so coverage never depends on them.
 */
async function statisticsQuantiles(client: ClientBase, table: ResolvedTable, key: SplitKey, n: number): Promise<string[] | null> {
  if (key.kind === 'text') return null;
  // An error aborts the whole transaction, snapshot and all: a savepoint keeps a refused view to this query.
  await client.query('SAVEPOINT pg_extract_statistics');
  let bounds: string[] | undefined;
  try {
    const r = await client.query<{ bounds: string[] }>(
      `SELECT s.histogram_bounds::text::text[] AS bounds
         FROM pg_catalog.pg_class c
         JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
         -- The names as constants too: joined only on the view's columns, pg_stats was read whole (0.5 ms against 5.6 at 200 tables).
         JOIN pg_catalog.pg_stats s ON s.schemaname = ns.nspname AND s.tablename = c.relname AND s.schemaname = $4 AND s.tablename = $5
                                   AND s.attname = $2 AND NOT s.inherited
         LEFT JOIN pg_catalog.pg_stat_all_tables st ON st.relid = c.oid
        WHERE c.oid = $1::regclass AND c.relkind IN ('r', 'm')
          AND s.histogram_bounds IS NOT NULL AND s.most_common_vals IS NULL
          AND c.relpages > 0 AND c.reltuples > 0
          AND pg_catalog.pg_relation_size(c.oid) / current_setting('block_size')::int <= c.relpages * (1 + $3::float8)
          AND coalesce(st.n_mod_since_analyze, 0) <= c.reltuples * $3::float8`,
      [quoteQualified(table.schema, table.table), key.name, STATISTICS_STALE_FRACTION, table.schema, table.table],
    );
    bounds = r.rows[0]?.bounds;
    await client.query('RELEASE SAVEPOINT pg_extract_statistics');
  } catch (err) {
    if ((err as { code?: string }).code !== INSUFFICIENT_PRIVILEGE) throw err;
    await client.query('ROLLBACK TO SAVEPOINT pg_extract_statistics');
    return null;
  }
  const buckets = (bounds?.length ?? 0) - 1;
  if (!bounds || buckets < n) return null;
  return Array.from({ length: n - 1 }, (_, i) => bounds[Math.round(((i + 1) * buckets) / n)]!);
}

/** Relation kinds TABLESAMPLE reads pages of; a view or a foreign table it refuses. */
const PAGE_SAMPLED = new Set(['r', 'm', 'p']);

/**
 * n-1 quantiles of the key: exact for a table of at most sampleRows(n) rows, else from a sample of
 * about that many (sorting a whole table of 970 k rows took most of a 5 M-row set's planning): of
 * pages where TABLESAMPLE reads them, else of the rows a view gives (all read, a share sorted).
 * `from` is the table's FROM item (catalog.ts `fromItem`), `ordered` the key as the cuts are sorted.
 */
async function sampleQuantiles(client: ClientBase, from: string, relkind: string, key: string, ordered: string, n: number, rows: number): Promise<string[]> {
  const fractions = Array.from({ length: n - 1 }, (_, i) => (i + 1) / n);
  const share = rows > sampleRows(n) ? Math.max(0.0001, sampleRows(n) / rows) : null;
  const pages = share !== null && PAGE_SAMPLED.has(relkind) ? ` TABLESAMPLE SYSTEM (${(100 * share).toFixed(4)}) REPEATABLE (42)` : '';
  const some = share !== null && !PAGE_SAMPLED.has(relkind) ? ` AND random() < ${share}` : '';
  const q = await client.query<{ q: string[] | null }>(
    `SELECT (percentile_disc($1::float8[]) WITHIN GROUP (ORDER BY ${ordered}))::text[] AS q FROM ${from}${pages} WHERE ${key} IS NOT NULL${some}`,
    [fractions],
  );
  return q.rows[0]?.q ?? [];
}

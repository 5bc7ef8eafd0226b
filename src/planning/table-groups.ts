/**
 * Groups of small tables: a run of many small tables pays per table (a session, a snapshot import,
 * an activity and its workflow task) far more than per row, so tables under SMALL_TABLE_BYTES are
 * copied together, a group per activity on one session. Pure and deterministic (workflow code).
 */

/** A table below this size (pg_table_size at planning) joins a group; bigger ones keep their partitions. */
export const SMALL_TABLE_BYTES = 8 * 1024 * 1024;
/** About how much work one group takes, in bytes: a partition's worth (SPLIT_BYTES), so a group takes about as long as one. */
export const GROUP_BYTES = 64 * 1024 * 1024;
/**
 * What a table costs a group beyond its bytes (its catalog lookup, COPY, file, fsync and rename),
 * as bytes of about the same time: it spreads many near-empty tables evenly over the groups.
 */
export const TABLE_COST_BYTES = 512 * 1024;

/**
 * Splits `tables` (biggest first) into the big ones, each copied as it was planned, and groups of
 * the small ones: at least one group per lane (`lanes`, the copies in flight) while there are
 * tables enough, and about GROUP_BYTES of work each. Each table goes to the group with the least
 * work so far, in the plan's order (biggest first), so the groups end close together. A group's
 * work stays under GROUP_BYTES + SMALL_TABLE_BYTES, so it holds at most about 145 tables.
 */
export function groupSmallTables<T extends { bytes: number }>(tables: readonly T[], lanes: number): { big: T[]; groups: T[][] } {
  const big = tables.filter((t) => t.bytes >= SMALL_TABLE_BYTES);
  const small = tables.filter((t) => t.bytes < SMALL_TABLE_BYTES);
  const cost = (t: T) => t.bytes + TABLE_COST_BYTES;
  const work = small.reduce((sum, t) => sum + cost(t), 0);
  const count = Math.min(small.length, Math.max(lanes, Math.ceil(work / GROUP_BYTES)));
  const groups: { work: number; tables: T[] }[] = Array.from({ length: count }, () => ({ work: 0, tables: [] }));
  for (const table of small) {
    const least = groups.reduce((min, g) => (g.work < min.work ? g : min));
    least.work += cost(table);
    least.tables.push(table);
  }
  return { big, groups: groups.map((g) => g.tables) };
}

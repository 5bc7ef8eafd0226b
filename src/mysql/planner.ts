/**
 * Plans a MySQL table's key ranges: MIN, MAX and "any NULL?" of the integer split key, split
 * evenly by the shared range planner (open-ended first and last ranges, NULL keys apart). `auto`
 * sizes the plan from information_schema's row estimate, never a COUNT(*).
 */
import type { Connection } from 'mysql2';
import { ErrorCode, PgExtractError } from '../errors';
import { AUTO_MAX_PARTITIONS, AUTO_TARGET_ROWS, autoPartitionCount, planKeyRanges } from '../planning/range-planner';
import type { PartitionRange } from '../contract/partition-range';
import { quoteIdent, quoteQualified } from '../postgres/sql';
import type { SourceTable } from '../sources/source-adapter';

const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

export async function planMysqlRanges(
  conn: Connection,
  table: SourceTable,
  partitions: number | 'auto',
): Promise<{ ranges: PartitionRange[]; rowCount: number | null }> {
  let rowCount: number | null = null;
  if (partitions === 'auto') {
    const [rows] = await conn
      .promise()
      .query('SELECT TABLE_ROWS AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?', [table.schema, table.table]);
    rowCount = Number((rows as { n: unknown }[])[0]?.n ?? 0);
  }
  const wanted = partitions === 'auto' ? autoPartitionCount(rowCount!, { targetRows: AUTO_TARGET_ROWS, max: AUTO_MAX_PARTITIONS }) : partitions;
  if (wanted === 1) return { ranges: [{ kind: 'all' }], rowCount };
  if (!table.key) {
    // `auto` falls back to one range; a count the user asked for is refused rather than silently ignored.
    if (partitions === 'auto') return { ranges: [{ kind: 'all' }], rowCount };
    throw new PgExtractError(
      ErrorCode.KEY_TYPE_UNSUPPORTED,
      `${table.schema}.${table.table} has no single-column integer primary key or unique key to split on: pass --key COL (an integer column) or --partitions 1`,
      { field: 'key' },
    );
  }
  const key = quoteIdent(table.key.name);
  const relation = quoteQualified(table.schema, table.table);
  const [rows] = await conn
    .promise()
    .query(`SELECT MIN(${key}) AS min, MAX(${key}) AS max, EXISTS (SELECT 1 FROM ${relation} WHERE ${key} IS NULL) AS has_nulls FROM ${relation}`);
  const b = (rows as { min: unknown; max: unknown; has_nulls: unknown }[])[0]!;
  return { ranges: planKeyRanges({ kind: 'integer', min: text(b.min), max: text(b.max), rowCount, hasNulls: Number(b.has_nulls) === 1 }, wanted), rowCount };
}

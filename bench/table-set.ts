/**
 * The many-table bench schema (issue #18): `tables` tables of the bench's shape, a few big and many
 * small, `rows` rows in all, to time `--schema` against `pg_dump -Fd -j2 -n` on the same tables, and
 * its load into a target database against `pgcopydb copy table-data`.
 */
import { Client as PgClient } from 'pg';
import { createBenchTable } from './bench-table';

/**
 * Row counts, biggest first, summing to exactly `rows`: each table 0.8 of the one before, down to
 * a floor of a thousandth of the biggest where most tables sit (200 tables, 5 M rows: about 970 k
 * down to 1 k, 31 tables above the floor and 169 on it).
 */
export function tableSetRows(tables: number, rows: number): number[] {
  const weights = Array.from({ length: tables }, (_, i) => Math.max(0.001, 0.8 ** i));
  const total = weights.reduce((a, b) => a + b, 0);
  const counts = weights.map((w) => Math.max(1, Math.floor((rows * w) / total)));
  counts[0]! += rows - counts.reduce((a, b) => a + b, 0);
  if (counts[0]! < (counts[1] ?? 1)) throw new Error(`--rows ${rows} is too few for ${tables} tables of at least one row each`);
  return counts;
}

/** The schema's `tables` tables, `schema.t000`, `schema.t001`, …, in {@link tableSetRows}' order. */
export function tableSetNames(schema: string, tables: number): string[] {
  return Array.from({ length: tables }, (_, i) => `${schema}.t${String(i).padStart(3, '0')}`);
}

/** Creates schema `schema` (dropped first) with the tables {@link tableSetNames} names, of `counts` rows each. */
export async function seedTableSet(url: string, schema: string, counts: number[]): Promise<void> {
  const pg = new PgClient({ connectionString: url });
  await pg.connect();
  try {
    await pg.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    const names = tableSetNames(schema, counts.length);
    for (const [i, rows] of counts.entries()) await createBenchTable(pg, names[i]!, rows);
  } finally {
    await pg.end();
  }
}

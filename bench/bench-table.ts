/**
 * The bench's table shape, one definition for every table it seeds (the single table, the
 * many-table schema, the PG → PG target): mixed types whose text formatting is the server's work.
 */
import type { Client as PgClient } from 'pg';

export const BENCH_COLUMNS = '(id bigint PRIMARY KEY, name text, amount numeric(12,2), at timestamptz, ok boolean, ref uuid, note text)';

/** Creates `table` (a bench-made name, never user input) with `rows` rows, vacuumed so every run reads the same all-visible pages. */
export async function createBenchTable(pg: PgClient, table: string, rows: number): Promise<void> {
  await pg.query(`CREATE TABLE ${table} ${BENCH_COLUMNS}`);
  await pg.query(
    `INSERT INTO ${table} SELECT g, 'customer ' || (g % 9973), (g % 100000) / 100.0, timestamptz '2026-01-01' + g * interval '1 second',
            g % 2 = 0, md5(g::text)::uuid, repeat(chr((97 + g % 26)::int), (20 + g % 30)::int) FROM generate_series(1, $1::bigint) g`,
    [rows],
  );
  await pg.query(`VACUUM ANALYZE ${table}`);
}

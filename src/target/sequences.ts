/**
 * The sequences behind a loaded table's serial and identity columns, moved past the loaded rows.
 * A load keeps the source's values in such a column (as COPY, pg_dump and pgcopydb keep them: other
 * tables' rows refer to them) without advancing its sequence, so the target's next default would be
 * a value the column already holds. pg_dump's data carries each sequence's value; the files carry
 * rows only, so the loader sets each sequence from the column: past its highest value (lowest for a
 * descending sequence), never back.
 */
import type { Client } from 'pg';
import { withServerSearchPath } from '../postgres/session';
import { quoteIdent, quoteLiteral, quoteQualified } from '../postgres/sql';

/** A sequence that fills a column of a loaded table, as the catalog names them. */
interface ColumnSequence {
  table_schema: string;
  table_name: string;
  column_name: string;
  sequence_schema: string;
  sequence_name: string;
  descending: boolean;
}

/**
 * The integer columns of `tables` filled from a sequence: one the column owns (serial's OWNED BY,
 * an identity) or one whose next value is its default (a partition's copy of its parent's default,
 * a sequence several tables share). Only where this role may read the column (SELECT on it) and
 * read and set the sequence (SELECT and UPDATE on it); anything else is left as it is.
 */
async function columnSequences(client: Client, tables: readonly { schema: string; table: string }[]): Promise<ColumnSequence[]> {
  const r = await client.query<ColumnSequence>(
    `WITH loaded AS (
       SELECT c.oid FROM unnest($1::text[], $2::text[]) AS t(schema, name)
         JOIN pg_catalog.pg_namespace n ON n.nspname = t.schema
         JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.name),
     filled(relid, attnum, seq) AS (
       -- Owned (an identity has no default); a default, if any, is the sequence's next value and nothing else (as serial
       -- writes it), not one that computes with it (nextval(…) * 1000), whose values the sequence would be set to.
       SELECT d.refobjid, d.refobjsubid, d.objid FROM pg_catalog.pg_depend d
         LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = d.refobjid AND ad.adnum = d.refobjsubid
        WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.refclassid = 'pg_catalog.pg_class'::regclass
          AND d.deptype IN ('a', 'i') AND d.refobjid IN (SELECT oid FROM loaded)
          AND (ad.oid IS NULL OR pg_catalog.pg_get_expr(ad.adbin, ad.adrelid) = pg_catalog.format('nextval(%L::regclass)', d.objid::regclass::text))
       UNION
       SELECT ad.adrelid, ad.adnum, d.refobjid FROM pg_catalog.pg_attrdef ad
         JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_attrdef'::regclass AND d.objid = ad.oid
                                    AND d.refclassid = 'pg_catalog.pg_class'::regclass
        WHERE ad.adrelid IN (SELECT oid FROM loaded)
          AND pg_catalog.pg_get_expr(ad.adbin, ad.adrelid) = pg_catalog.format('nextval(%L::regclass)', d.refobjid::regclass::text))
     SELECT tn.nspname AS table_schema, c.relname AS table_name, a.attname AS column_name,
            sn.nspname AS sequence_schema, s.relname AS sequence_name, q.seqincrement < 0 AS descending
       FROM filled f
       JOIN pg_catalog.pg_class c ON c.oid = f.relid JOIN pg_catalog.pg_namespace tn ON tn.oid = c.relnamespace
       JOIN pg_catalog.pg_attribute a ON a.attrelid = f.relid AND a.attnum = f.attnum AND NOT a.attisdropped
       JOIN pg_catalog.pg_class s ON s.oid = f.seq AND s.relkind = 'S' JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace
       JOIN pg_catalog.pg_sequence q ON q.seqrelid = s.oid
      WHERE a.atttypid IN ('pg_catalog.int2'::regtype, 'pg_catalog.int4'::regtype, 'pg_catalog.int8'::regtype)
        AND pg_catalog.has_column_privilege(f.relid, a.attnum, 'SELECT')
        AND pg_catalog.has_sequence_privilege(s.oid, 'SELECT') AND pg_catalog.has_sequence_privilege(s.oid, 'UPDATE')`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  return r.rows;
}

/**
 * Each sequence's edge: the highest value its column holds (lowest, descending), as text, or null
 * for an empty column. Read under the server's search_path ({@link withServerSearchPath}): a row
 * security policy's function runs in this read, and resolves its names as the role's own queries
 * would. So `max` and `min` are named with their schema, and nothing else here is resolved by name.
 */
async function columnEdges(client: Client, sequences: readonly ColumnSequence[]): Promise<(string | null)[]> {
  const edges = sequences.map(
    (s, i) =>
      `(SELECT pg_catalog.${s.descending ? 'min' : 'max'}(${quoteIdent(s.column_name)}) FROM ${quoteQualified(s.table_schema, s.table_name)})::pg_catalog.text AS e${i}`,
  );
  const r = await withServerSearchPath(client, () => client.query<Record<string, string | null>>(`SELECT ${edges.join(', ')}`));
  return sequences.map((_, i) => r.rows[0]![`e${i}`] ?? null);
}

/**
 * Sets every such sequence of `tables` (see {@link columnSequences}) whose next value the column
 * already holds to the column's highest value (lowest, descending), so its next value follows the
 * rows, in one statement. Run inside the load's transaction, after its rows: it sees them, and a
 * load its fence finds committed sets nothing. Like every `setval` (pg_restore's too) it is not
 * undone by a rollback: a load that then fails leaves the sequence ahead, a gap and no collision.
 * A value outside the sequence's bounds leaves it as it is. Returns how many it moved.
 */
export async function sequencesPastRows(client: Client, tables: readonly { schema: string; table: string }[]): Promise<number> {
  const sequences = await columnSequences(client, tables);
  if (sequences.length === 0) return 0;
  const edges = await columnEdges(client, sequences);
  const moves = sequences.flatMap((s, i) => {
    const edge = edges[i] ?? null;
    if (edge === null) return [];
    const sequence = quoteQualified(s.sequence_schema, s.sequence_name);
    const oid = `${quoteLiteral(sequence)}::regclass`;
    // numeric: a sequence at its bound would overflow bigint here.
    const next = `CASE WHEN q.is_called THEN q.last_value::numeric + p.seqincrement ELSE q.last_value END`;
    const behind = s.descending ? `${next} >= e.edge` : `${next} <= e.edge`;
    return [
      `SELECT pg_catalog.setval(${oid}, e.edge)
         FROM ${sequence} q, pg_catalog.pg_sequence p, (SELECT ${quoteLiteral(edge)}::bigint AS edge) e
        WHERE p.seqrelid = ${oid} AND ${behind} AND e.edge BETWEEN p.seqmin AND p.seqmax`,
    ];
  });
  if (moves.length === 0) return 0;
  const r = await client.query<{ moved: string }>(`SELECT count(*)::text AS moved FROM (${moves.join('\n UNION ALL ')}) m`);
  return Number(r.rows[0]!.moved);
}

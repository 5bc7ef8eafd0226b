/**
 * The sequences behind a loaded table's serial and identity columns, moved past the loaded rows.
 * A load keeps the source's values in such a column (as COPY, pg_dump and pgcopydb keep them: other
 * tables' rows refer to them) without advancing its sequence, so the target's next default would be
 * a value the column already holds. pg_dump's data carries each sequence's value; the files carry
 * rows only, so the loader sets each sequence from the column: past its highest value (lowest for a
 * descending sequence), never back.
 */
import type { Client } from 'pg';
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
 * The integer columns of `tables` whose sequence the table owns (serial: OWNED BY; identity) and
 * which this role may read and set (SELECT and UPDATE on the sequence); another role's sequence is
 * left as it is.
 */
async function columnSequences(client: Client, tables: readonly { schema: string; table: string }[]): Promise<ColumnSequence[]> {
  const r = await client.query<ColumnSequence>(
    `SELECT DISTINCT tn.nspname AS table_schema, c.relname AS table_name, a.attname AS column_name,
            sn.nspname AS sequence_schema, s.relname AS sequence_name, q.seqincrement < 0 AS descending
       FROM unnest($1::text[], $2::text[]) AS t(schema, name)
       JOIN pg_catalog.pg_namespace tn ON tn.nspname = t.schema
       JOIN pg_catalog.pg_class c ON c.relnamespace = tn.oid AND c.relname = t.name
       JOIN pg_catalog.pg_depend d ON d.refclassid = 'pg_catalog.pg_class'::regclass AND d.refobjid = c.oid
                                  AND d.classid = 'pg_catalog.pg_class'::regclass AND d.deptype IN ('a', 'i')
       JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'
       JOIN pg_catalog.pg_namespace sn ON sn.oid = s.relnamespace
       JOIN pg_catalog.pg_sequence q ON q.seqrelid = s.oid
       JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.refobjsubid AND NOT a.attisdropped
      WHERE a.atttypid IN ('pg_catalog.int2'::regtype, 'pg_catalog.int4'::regtype, 'pg_catalog.int8'::regtype)
        AND pg_catalog.has_sequence_privilege(s.oid, 'SELECT') AND pg_catalog.has_sequence_privilege(s.oid, 'UPDATE')`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  return r.rows;
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
  const moves = sequences.map((s) => {
    const sequence = quoteQualified(s.sequence_schema, s.sequence_name);
    const oid = `${quoteLiteral(sequence)}::regclass`;
    const edge = `(SELECT ${s.descending ? 'min' : 'max'}(${quoteIdent(s.column_name)}) FROM ${quoteQualified(s.table_schema, s.table_name)})`;
    // numeric: a sequence at its bound would overflow bigint here.
    const next = `CASE WHEN q.is_called THEN q.last_value::numeric + p.seqincrement ELSE q.last_value END`;
    const behind = s.descending ? `${next} >= e.edge` : `${next} <= e.edge`;
    return `SELECT pg_catalog.setval(${oid}, e.edge)
              FROM ${sequence} q, pg_catalog.pg_sequence p, (SELECT ${edge}::bigint AS edge) e
             WHERE p.seqrelid = ${oid} AND ${behind} AND e.edge BETWEEN p.seqmin AND p.seqmax`;
  });
  const r = await client.query<{ moved: string }>(`SELECT count(*)::text AS moved FROM (${moves.join('\n UNION ALL ')}) m`);
  return Number(r.rows[0]!.moved);
}

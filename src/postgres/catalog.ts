/**
 * Resolves a table, its columns and its split key from the catalog (pg_class, pg_attribute,
 * pg_index). Names the user gave are only ever bind parameters here; what comes back is what we
 * quote into SQL, so nothing user-given is spliced raw.
 */
import type { ClientBase } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import type { SourceColumn } from '../contract/source-column';
import type { KeyCollation, SplitKey } from '../contract/partition-range';
import { quoteIdent, quoteQualified } from './sql';

const KEY_KINDS: Record<string, Pick<SplitKey, 'kind' | 'sqlType'>> = {
  smallint: { kind: 'integer', sqlType: 'int8' },
  integer: { kind: 'integer', sqlType: 'int8' },
  bigint: { kind: 'integer', sqlType: 'int8' },
  numeric: { kind: 'numeric', sqlType: 'numeric' },
  date: { kind: 'date', sqlType: 'date' },
  'timestamp without time zone': { kind: 'timestamp', sqlType: 'timestamp' },
  'timestamp with time zone': { kind: 'timestamptz', sqlType: 'timestamptz' },
  uuid: { kind: 'uuid', sqlType: 'uuid' },
  // varchar has no operators of its own: it compares (and is indexed) as text.
  text: { kind: 'text', sqlType: 'text' },
  'character varying': { kind: 'text', sqlType: 'text' },
  character: { kind: 'text', sqlType: 'bpchar' },
};

/** A column as readers need to know it (see SourceColumn); `type` is its base type's name, for the key kinds. */
export interface ResolvedColumn extends SourceColumn {
  type: string;
}

export interface ResolvedTable {
  schema: string;
  table: string;
  /** pg_class.relkind: r table, p partitioned, m materialized view, v view, f foreign. */
  relkind: string;
  columns: ResolvedColumn[];
  /** The primary key's columns in key order; empty without one. */
  primaryKey: string[];
  /** The split key, or null when the table has none we can use (then ctid page ranges). */
  key: SplitKey | null;
}

/** What a caller asks for: names as parsed from input, not yet trusted. */
export interface TableRequest {
  schema: string;
  table: string;
  /** Columns to export, in order; all columns when absent. */
  columns?: string[];
  /** Split key; the single-column primary key (or unique index) when absent. */
  key?: string;
}

export async function resolveTable(client: ClientBase, request: TableRequest): Promise<ResolvedTable> {
  const rel = await client.query<{ oid: string; relkind: string }>(
    `SELECT c.oid::text AS oid, c.relkind::text AS relkind
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'm', 'v', 'f')`,
    [request.schema, request.table],
  );
  const found = rel.rows[0];
  if (!found) {
    throw new PgExtractError(ErrorCode.TABLE_NOT_FOUND, `table ${request.schema}.${request.table} does not exist or is not readable`, { field: 'table' });
  }
  const cols = await client.query<ResolvedColumn>(
    `SELECT a.attname AS name, a.atttypid::regtype::text AS type, pg_catalog.format_type(a.atttypid, a.atttypmod) AS "pgType",
            a.attnotnull AS "notNull",
            (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_catalog.pg_enum e WHERE e.enumtypid = a.atttypid) AS "enumLabels"
       FROM pg_catalog.pg_attribute a
      WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [found.oid],
  );
  const pk = await client.query<{ name: string }>(
    `SELECT a.attname AS name
       FROM pg_catalog.pg_index i
       CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
       JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
      WHERE i.indrelid = $1::oid AND i.indisprimary
      ORDER BY k.n`,
    [found.oid],
  );
  const byName = new Map(cols.rows.map((c) => [c.name, c]));
  const columns = (request.columns ?? cols.rows.map((c) => c.name)).map((name) => {
    const column = byName.get(name);
    if (!column)
      throw new PgExtractError(ErrorCode.COLUMN_NOT_FOUND, `column ${name} does not exist in ${request.schema}.${request.table}`, { field: 'columns' });
    return column;
  });
  let keyName = request.key;
  if (keyName === undefined) {
    const idx = await client.query<{ name: string }>(
      `SELECT a.attname AS name
         FROM pg_catalog.pg_index i
         JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE i.indrelid = $1::oid AND i.indnatts = 1 AND (i.indisprimary OR i.indisunique) AND i.indpred IS NULL
        ORDER BY i.indisprimary DESC LIMIT 1`,
      [found.oid],
    );
    keyName = idx.rows[0]?.name;
  }
  let key: SplitKey | null = null;
  if (keyName !== undefined) {
    const column = byName.get(keyName);
    if (!column)
      throw new PgExtractError(ErrorCode.COLUMN_NOT_FOUND, `key column ${keyName} does not exist in ${request.schema}.${request.table}`, { field: 'key' });
    const kind = KEY_KINDS[column.type];
    if (!kind) {
      if (request.key !== undefined) {
        throw new PgExtractError(ErrorCode.KEY_TYPE_UNSUPPORTED, `key ${keyName} has type ${column.type}; supported: ${Object.keys(KEY_KINDS).join(', ')}`, {
          field: 'key',
        });
      }
    } else {
      key = { name: column.name, ...kind };
      if (kind.kind === 'text') key.collation = await columnCollation(client, found.oid, column.name);
    }
  }
  return { schema: request.schema, table: request.table, relkind: found.relkind, columns, primaryKey: pk.rows.map((r) => r.name), key };
}

async function columnCollation(client: ClientBase, relation: string, column: string): Promise<KeyCollation> {
  const r = await client.query<KeyCollation>(
    `SELECT n.nspname AS schema, c.collname AS name
       FROM pg_catalog.pg_attribute a
       JOIN pg_catalog.pg_collation c ON c.oid = a.attcollation
       JOIN pg_catalog.pg_namespace n ON n.oid = c.collnamespace
      WHERE a.attrelid = $1::oid AND a.attname = $2`,
    [relation, column],
  );
  const collation = r.rows[0];
  if (!collation) throw new PgExtractError(ErrorCode.KEY_TYPE_UNSUPPORTED, `key ${column} has no collation`, { field: 'key' });
  return collation;
}

/** Whether a partition's key is the one the plan was made with: same column, type and collation. */
export function sameSplitKey(a: SplitKey | null, b: SplitKey | null): boolean {
  return a?.name === b?.name && a?.sqlType === b?.sqlType && a?.collation?.schema === b?.collation?.schema && a?.collation?.name === b?.collation?.name;
}

/** The columns as the manifest and the data package describe them. */
export function sourceColumns(table: ResolvedTable): SourceColumn[] {
  return table.columns.map(({ name, pgType, notNull, enumLabels }) => ({ name, pgType, notNull, enumLabels }));
}

/** `SELECT "a", "b" FROM "s"."t"` for a resolved table. */
export function selectSql(table: ResolvedTable, where?: string): string {
  const list = table.columns.map((c) => quoteIdent(c.name)).join(', ');
  return `SELECT ${list} FROM ${quoteQualified(table.schema, table.table)}${where ? ` WHERE ${where}` : ''}`;
}

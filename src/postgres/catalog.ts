/**
 * Resolves a table, its columns and its split key from the catalog (pg_class, pg_attribute,
 * pg_index). Names the user gave are only ever bind parameters here; what comes back is what we
 * quote into SQL, so nothing user-given is spliced raw.
 */
import type { ClientBase } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import type { ExportFormat } from '../contract/formats';
import type { SourceColumn } from '../contract/source-column';
import { formatName, formatTableName } from '../contract/identifiers';
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

/** What the tables are resolved for. */
export interface ResolveOptions {
  /**
   * Their rows are read as a source's: a table whose row security applies to this role (its
   * policies would hide rows) is refused with SOURCE_ROW_SECURITY, where a target's is not.
   * Source sessions also read with row_security off (./session.ts), which fails such a read. A
   * table that reads a foreign table is refused with SOURCE_FOREIGN_TABLE.
   * @default false
   */
  readRows?: boolean;
  /**
   * The format their rows are copied in. In binary, a chosen column whose type has no binary output
   * function (`aclitem`, or an array or a domain of one) is refused with FORMAT_OPTIONS_INVALID,
   * where its COPY would fail once its file was begun, and again on every retry.
   * @default none: not checked
   */
  format?: ExportFormat['format'];
}

export async function resolveTable(client: ClientBase, request: TableRequest, options: ResolveOptions = {}): Promise<ResolvedTable> {
  return (await resolveTables(client, [request], options))[0]!;
}

/**
 * `CROSS JOIN LATERAL (…) AS base` for the pg_attribute row `a`: its type's base type (`base.oid`),
 * through domains over domains, with the typmod the domain declares (`base.typmod`: a domain over
 * numeric(12,2) is numeric(12,2), and so is one over it); a type that is no domain is itself.
 * Each step looks its type up by oid: as a join, the planner hashed a scan of all of pg_type for
 * every column (the 1,400 columns of 200 tables: 89–149 ms, against 16–23 ms this way).
 */
export const ATTRIBUTE_BASE_TYPE = `CROSS JOIN LATERAL (
                 WITH RECURSIVE chain(oid, typmod, depth) AS (
                   SELECT a.atttypid, a.atttypmod, 0
                   UNION ALL
                   SELECT t.typbasetype, GREATEST(chain.typmod, t.typtypmod), chain.depth + 1
                     FROM chain CROSS JOIN LATERAL (
                            -- OFFSET 0 keeps it a lookup: pulled up into a join, it is hashed again.
                            SELECT typbasetype, typtypmod FROM pg_catalog.pg_type
                             WHERE oid = chain.oid AND typtype = 'd' OFFSET 0) AS t)
                 SELECT oid, typmod FROM chain ORDER BY depth DESC LIMIT 1) AS base`;

/** The relations the SELECT rule of view `view` (an oid expression) reads, as rows of `child`. */
const viewReadsOf = (view: string): string => `
  SELECT d.refobjid AS child
    FROM pg_catalog.pg_rewrite w
    JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = w.oid AND d.refclassid = 'pg_catalog.pg_class'::regclass
   WHERE w.ev_class = ${view} AND w.ev_type = '1' AND d.refobjid <> w.ev_class`;

/** The relations every view reads (the view → each relation), as `parent, child` rows. */
export const VIEW_READS = `
  SELECT v.oid AS parent, r.child FROM pg_catalog.pg_class v CROSS JOIN LATERAL (${viewReadsOf('v.oid')}) r WHERE v.relkind = 'v'`;

/**
 * Whether reading relation `c` reads a relation for which `holds` (of its alias) is true: `c` itself, or a
 * partition or a relation a view reads, at any depth (an inheritance child too, which a view reads
 * unless it says ONLY). An ordinary table is read with ONLY, and a materialized view's rows are its
 * own. Each step looks up the children of the relations reached so far by their oids.
 */
const readsWhere = (holds: (rel: string) => string): string => `(CASE WHEN c.relkind IN ('p', 'v') THEN EXISTS (
       WITH RECURSIVE reached(oid) AS (
         SELECT c.oid
         UNION
         SELECT e.child FROM reached CROSS JOIN LATERAL (
           SELECT i.inhrelid AS child FROM pg_catalog.pg_inherits i WHERE i.inhparent = reached.oid
           UNION ALL${viewReadsOf('reached.oid')}) e)
       SELECT FROM reached JOIN pg_catalog.pg_class f ON f.oid = reached.oid WHERE ${holds('f')}) ELSE ${holds('c')} END)`;

/** Whether reading `c` reads a foreign table (see {@link readsWhere}). */
const READS_FOREIGN_TABLE = readsWhere((rel) => `${rel}.relkind = 'f'`);

/**
 * Whether reading `c` reads an unlogged table on a standby, which keeps none of their rows (its
 * read fails with 0A000, as pg_dump skips such tables' data there).
 */
const READS_UNLOGGED_ON_STANDBY = `(pg_catalog.pg_is_in_recovery() AND ${readsWhere((rel) => `${rel}.relpersistence = 'u'`)})`;

/**
 * The names of `c`'s columns whose type has no binary output function (`typsend`), or is made of
 * one at any depth: a domain's base type, an array's element, a composite's attributes, a range's
 * subtype, a multirange's range. COPY's binary send functions call their parts' own, so a part
 * without one fails the COPY mid-file (aclitem, and extension types such as isn's and seg).
 */
const COLUMNS_WITHOUT_BINARY = `(SELECT json_agg(a.attname)
               FROM pg_catalog.pg_attribute a
              WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                AND EXISTS (
                  WITH RECURSIVE parts(oid) AS (
                    SELECT a.atttypid
                    UNION
                    SELECT part.oid FROM parts JOIN pg_catalog.pg_type t ON t.oid = parts.oid CROSS JOIN LATERAL (
                      SELECT t.typelem WHERE t.typelem <> 0
                      UNION ALL SELECT t.typbasetype WHERE t.typbasetype <> 0
                      UNION ALL SELECT f.atttypid FROM pg_catalog.pg_attribute f
                                 WHERE t.typrelid <> 0 AND f.attrelid = t.typrelid AND f.attnum > 0 AND NOT f.attisdropped
                      UNION ALL SELECT r.rngsubtype FROM pg_catalog.pg_range r WHERE r.rngtypid = t.oid
                      UNION ALL SELECT r.rngtypid FROM pg_catalog.pg_range r WHERE r.rngmultitypid = t.oid) part(oid))
                  SELECT FROM parts JOIN pg_catalog.pg_type t ON t.oid = parts.oid WHERE t.typsend = 0))`;

/** What one catalog query returns per requested table (null oid: no such readable relation). */
interface CatalogRow {
  oid: string | null;
  relkind: string;
  /** Whether row security applies to this role on the table (`row_security_active`). */
  rowSecurity: boolean | null;
  /** Whether reading it reads a foreign table ({@link READS_FOREIGN_TABLE}). */
  readsForeign: boolean | null;
  /** Whether reading it reads an unlogged table on a standby ({@link READS_UNLOGGED_ON_STANDBY}). */
  readsUnlogged: boolean | null;
  /** The columns whose type has no binary form ({@link COLUMNS_WITHOUT_BINARY}); null when none, or not asked. */
  withoutBinary: string[] | null;
  columns: (ResolvedColumn & { collation: KeyCollation | null })[] | null;
  primaryKey: string[] | null;
  uniqueKey: string | null;
}

/**
 * Resolves every request in one catalog query (one round trip however many tables: a group of
 * small tables pays per table a COPY, not a catalog conversation), in the order given.
 */
export async function resolveTables(client: ClientBase, requests: readonly TableRequest[], options: ResolveOptions = {}): Promise<ResolvedTable[]> {
  const binary = options.format === 'binary';
  const r = await client.query<CatalogRow>(
    `SELECT c.oid::text AS oid, c.relkind::text AS relkind, pg_catalog.row_security_active(c.oid) AS "rowSecurity",
            ${options.readRows ? READS_FOREIGN_TABLE : 'false'} AS "readsForeign",
            ${options.readRows ? READS_UNLOGGED_ON_STANDBY : 'false'} AS "readsUnlogged",
            ${binary ? COLUMNS_WITHOUT_BINARY : 'NULL'} AS "withoutBinary",
            (SELECT json_agg(json_build_object(
                      'name', a.attname, 'type', base.oid::regtype::text, 'pgType', pg_catalog.format_type(base.oid, base.typmod),
                      'notNull', a.attnotnull,
                      'enumLabels', (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_catalog.pg_enum e WHERE e.enumtypid = base.oid),
                      'collation', (SELECT json_build_object('schema', cn.nspname, 'name', co.collname)
                                      FROM pg_catalog.pg_collation co JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace
                                     WHERE co.oid = a.attcollation))
                    ORDER BY a.attnum)
               FROM pg_catalog.pg_attribute a
               -- A domain's values are its base type's in every format COPY writes, so readers are told that type.
               ${ATTRIBUTE_BASE_TYPE}
              WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
            (SELECT json_agg(a.attname ORDER BY k.n)
               FROM pg_catalog.pg_index i
               CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
               JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
              WHERE i.indrelid = c.oid AND i.indisprimary) AS "primaryKey",
            (SELECT a.attname
               FROM pg_catalog.pg_index i
               JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
              WHERE i.indrelid = c.oid AND i.indnatts = 1 AND (i.indisprimary OR i.indisunique) AND i.indpred IS NULL
              ORDER BY i.indisprimary DESC LIMIT 1) AS "uniqueKey"
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(schema, name, n)
       LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = r.schema
       LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = r.name AND c.relkind IN ('r', 'p', 'm', 'v', 'f')
      ORDER BY r.n`,
    [requests.map((q) => q.schema), requests.map((q) => q.table)],
  );
  const tables = requests.map((request, i) => tableOf(request, r.rows[i]!));
  if (options.readRows) {
    // A read that would not be the whole table as of the snapshot is refused before any file, naming the tables.
    const flagged = (flag: 'rowSecurity' | 'readsForeign' | 'readsUnlogged') => tables.filter((_, i) => r.rows[i]![flag]).map(formatTableName);
    const refuse = (code: ErrorCode, message: string): never => {
      throw new PgExtractError(code, message, { field: 'source' });
    };
    const reads = (names: string[]) => `${names.join(', ')} read${names.length === 1 ? 's' : ''}`;
    const policed = flagged('rowSecurity');
    if (policed.length > 0) {
      refuse(
        ErrorCode.SOURCE_ROW_SECURITY,
        `row security applies to the source role on ${policed.join(', ')}: its policies would show only some rows, and a copy of them would pass for the whole`,
      );
    }
    const foreign = flagged('readsForeign');
    if (foreign.length > 0) {
      refuse(
        ErrorCode.SOURCE_FOREIGN_TABLE,
        `${reads(foreign)} a foreign table, whose rows its wrapper fetches in a transaction of its own on the remote server, not at the run's snapshot: a copy of it could not be claimed as of one point in time`,
      );
    }
    const unlogged = flagged('readsUnlogged');
    if (unlogged.length > 0) {
      refuse(ErrorCode.SOURCE_UNLOGGED_ON_STANDBY, `${reads(unlogged)} an unlogged table, and the source is a standby, which keeps no rows of unlogged tables`);
    }
  }
  if (binary) {
    const unsendable = tables.flatMap((table, i) =>
      table.columns.filter((c) => r.rows[i]!.withoutBinary?.includes(c.name)).map((c) => `${formatTableName(table)}.${formatName(c.name)} (${c.pgType})`),
    );
    if (unsendable.length > 0) {
      throw new PgExtractError(
        ErrorCode.FORMAT_OPTIONS_INVALID,
        `${unsendable.join(', ')} ${unsendable.length === 1 ? 'has a type' : 'have types'} with no binary form: export as csv, or leave ${unsendable.length === 1 ? 'it' : 'them'} out (--columns, --exclude)`,
        { field: 'format' },
      );
    }
  }
  return tables;
}

function tableOf(request: TableRequest, found: CatalogRow): ResolvedTable {
  if (found.oid === null) {
    throw new PgExtractError(ErrorCode.TABLE_NOT_FOUND, `table ${request.schema}.${request.table} does not exist or is not readable`, { field: 'table' });
  }
  const all = found.columns ?? [];
  const byName = new Map(all.map(({ collation: _collation, ...c }) => [c.name, c]));
  const columns = (request.columns ?? all.map((c) => c.name)).map((name) => {
    const column = byName.get(name);
    if (!column)
      throw new PgExtractError(ErrorCode.COLUMN_NOT_FOUND, `column ${name} does not exist in ${request.schema}.${request.table}`, { field: 'columns' });
    return column;
  });
  const keyName = request.key ?? found.uniqueKey ?? undefined;
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
      if (kind.kind === 'text') {
        const collation = all.find((c) => c.name === keyName)!.collation;
        if (!collation) throw new PgExtractError(ErrorCode.KEY_TYPE_UNSUPPORTED, `key ${keyName} has no collation`, { field: 'key' });
        key.collation = collation;
      }
    }
  }
  return { schema: request.schema, table: request.table, relkind: found.relkind, columns, primaryKey: found.primaryKey ?? [], key };
}

/** Whether a partition's key is the one the plan was made with: same column, type and collation. */
export function sameSplitKey(a: SplitKey | null, b: SplitKey | null): boolean {
  return a?.name === b?.name && a?.sqlType === b?.sqlType && a?.collation?.schema === b?.collation?.schema && a?.collation?.name === b?.collation?.name;
}

/** The columns as the manifest and the data package describe them. */
export function sourceColumns(table: ResolvedTable): SourceColumn[] {
  return table.columns.map(({ name, pgType, notNull, enumLabels }) => ({ name, pgType, notNull, enumLabels }));
}

/**
 * The table's rows as a FROM item: `ONLY "s"."t"` for a table or foreign table, so an inheritance
 * parent gives its own rows, not its children's too (as COPY and pg_dump do: a schema's children are
 * tables of the set in their own right, and were exported twice); a partitioned table, whose rows are
 * all its partitions', and a view or materialized view as they are.
 */
export function fromItem(table: Pick<ResolvedTable, 'schema' | 'table' | 'relkind'>): string {
  const relation = quoteQualified(table.schema, table.table);
  return table.relkind === 'r' || table.relkind === 'f' ? `ONLY ${relation}` : relation;
}

/** `SELECT "a", "b" FROM ONLY "s"."t"` for a resolved table (see {@link fromItem}). */
export function selectSql(table: ResolvedTable, where?: string): string {
  const list = table.columns.map((c) => quoteIdent(c.name)).join(', ');
  return `SELECT ${list} FROM ${fromItem(table)}${where ? ` WHERE ${where}` : ''}`;
}

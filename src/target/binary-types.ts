/**
 * Whether binary files may load into their target tables. Binary COPY sends each value in its
 * type's own binary form and checks no type, so a value read into a column of another type turns
 * into another value without an error (a bigint 42 read as double precision is 2.08e-322, an
 * integer 7 read as a date is 2000-01-08). A binary load therefore first checks that every loaded
 * column has the source's type, and refuses the load, before anything is written, where one does not.
 */
import type { ClientBase } from 'pg';
import type { ExportFormat } from '../contract/formats';
import { ErrorCode, PgExtractError } from '../errors';
import { ATTRIBUTE_BASE_TYPE } from '../postgres/catalog';
import { quoteQualified } from '../postgres/sql';

/** A target table of a load: the loaded columns in file order and, with binary files, each one's source type (`format_type`, a domain as its base type). */
export interface TypedTable {
  schema: string;
  table: string;
  /** Absent from a load scheduled by an earlier release, which has no types either. */
  columns?: readonly string[];
  columnTypes?: readonly string[];
}

/**
 * Object identifier types: a value's binary form is the object's oid in the source database, which
 * names another object, or none, in the target's (its text is the object's name, which CSV carries).
 */
const OID_ALIAS = /^(?:regclass|regcollation|regconfig|regdictionary|regnamespace|regoper|regoperator|regproc|regprocedure|regrole|regtype)(?:\[\])?$/;

/** Types whose binary form is their text, so each reads the others' values as text, as CSV would. */
const TEXT_TYPES = '{pg_catalog.text,pg_catalog.varchar,pg_catalog.bpchar}';

/**
 * With binary files, throws TARGET_TYPE_MISMATCH naming every loaded column whose target type (a
 * domain's base type) is not the type the source's type name names on the target, typmods aside
 * (the target applies its own as it reads). Also accepted, since the target reads such values
 * exactly or refuses them: an enum column from an enum (of any schema: it reads a label and
 * refuses any other), from text, varchar or char, or from a type the target does not have (an
 * enum whose schema it lacks); and text, varchar and char from one another. A column the target
 * lacks is left to the COPY, which fails naming it. A column of an object identifier type
 * ({@link OID_ALIAS}) is refused whatever the target's type. CSV, and tables without types, pass.
 */
export async function requireBinaryTypes(client: ClientBase, format: ExportFormat['format'], tables: readonly TypedTable[]): Promise<void> {
  if (format !== 'binary') return;
  const loaded = tables.flatMap(({ schema, table, columns, columnTypes }) =>
    columns && columnTypes
      ? columns.map((name, i) => ({ label: `${schema}.${table}`, relation: quoteQualified(schema, table), name, type: columnTypes[i]! }))
      : [],
  );
  if (loaded.length === 0) return;
  const r = await client.query<{ n: string; sourceType: string; targetType: string; known: boolean }>(
    `SELECT s.n::text AS n, s.type AS "sourceType", pg_catalog.format_type(base.oid, base.typmod) AS "targetType", src.oid IS NOT NULL AS known
       FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS s(relation, name, type, n)
       JOIN pg_catalog.pg_attribute a ON a.attrelid = s.relation::regclass AND a.attname = s.name AND a.attnum > 0 AND NOT a.attisdropped
       ${ATTRIBUTE_BASE_TYPE}
       JOIN pg_catalog.pg_type bt ON bt.oid = base.oid
       LEFT JOIN pg_catalog.pg_type src ON src.oid = pg_catalog.to_regtype(s.type)
      -- coalesce: a source type the target does not have (src NULL) is a mismatch unless an enum reads it.
      WHERE NOT coalesce(
              base.oid = src.oid
              OR (bt.typtype = 'e' AND (src.oid IS NULL OR src.typtype = 'e' OR src.oid = ANY ($4::regtype[])))
              OR (base.oid = ANY ($4::regtype[]) AND src.oid = ANY ($4::regtype[])),
              false)
      ORDER BY s.n`,
    [loaded.map((c) => c.relation), loaded.map((c) => c.name), loaded.map((c) => c.type), TEXT_TYPES],
  );
  const mismatched = new Map(r.rows.map(({ n, sourceType, targetType, known }) => [Number(n) - 1, { sourceType, targetType, known }]));
  /** Why the i-th loaded column cannot load from binary files, or null. */
  const refusal = (i: number): string | null => {
    const { name, type } = loaded[i]!;
    if (OID_ALIAS.test(type)) return `${name} is ${type}, whose binary values are the source database's object ids`;
    const found = mismatched.get(i);
    if (!found) return null;
    return found.known
      ? `${name} is ${found.sourceType} in the files and ${found.targetType} there`
      : `${name} is ${found.sourceType} in the files, a type the target lacks`;
  };
  const byTable = new Map<string, string[]>();
  for (const [i, { label }] of loaded.entries()) {
    const why = refusal(i);
    if (why) byTable.set(label, [...(byTable.get(label) ?? []), why]);
  }
  if (byTable.size === 0) return;
  const named = [...byTable].map(([table, columns]) => `${table} (${columns.join('; ')})`).join(', ');
  throw new PgExtractError(
    ErrorCode.TARGET_TYPE_MISMATCH,
    `binary files cannot load into ${named}: a binary value is read as the target column's type, unchecked, so each loaded column needs the source's type, and an object reference its name, which only CSV holds`,
    { field: 'target' },
  );
}

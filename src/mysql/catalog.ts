/**
 * Resolves a MySQL/MariaDB table from information_schema: the schema is the database. Names the
 * user gave are only bind parameters; what comes back is what gets quoted into SQL. The split key
 * is an integer column: the one given, else a single-column primary key, else a single-column
 * unique index on a NOT NULL column.
 */
import type { Connection } from 'mysql2';
import { ErrorCode, PgExtractError } from '../errors';
import type { TableRequest } from '../postgres/catalog';
import { NAMEDATALEN } from '../contract/identifiers';
import type { SplitKey } from '../contract/partition-range';
import type { SourceTable } from '../sources/source-adapter';
import { quoteQualified } from '../postgres/sql';
import { pgTypeOfMysql } from './pg-types';

interface ColumnRow {
  name: string;
  column_type: string;
  data_type: string;
  nullable: string;
}

interface IndexRow {
  index_name: string;
  column_name: string;
}

const INTEGER_TYPES = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'bigint']);

export async function describeMysqlTable(conn: Connection, request: TableRequest): Promise<SourceTable> {
  const [columns] = await conn.promise().query(
    `SELECT COLUMN_NAME AS name, COLUMN_TYPE AS column_type, DATA_TYPE AS data_type, IS_NULLABLE AS nullable
       FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
    [request.schema, request.table],
  );
  const all = columns as ColumnRow[];
  if (all.length === 0)
    throw new PgExtractError(ErrorCode.TABLE_NOT_FOUND, `table ${request.schema}.${request.table} does not exist on the MySQL source`, { field: 'table' });
  const byName = new Map(all.map((c) => [c.name, c]));
  // information_schema lists only the columns the role may read: with column grants, "every column" would quietly be
  // some of them. SELECT * needs them all.
  if (request.columns === undefined) await readsEveryColumn(conn, request);
  const chosen = (request.columns ?? all.map((c) => c.name)).map((name) => {
    const column = byName.get(name);
    if (!column) throw new PgExtractError(ErrorCode.COLUMN_NOT_FOUND, `column ${JSON.stringify(name)} does not exist`, { field: 'columns' });
    return column;
  });
  // MySQL names take 64 characters; the files' headers, data packages and loads name columns as PostgreSQL does, in
  // at most 63 bytes. Refused here, before any range is planned, rather than by the first copy.
  for (const name of [request.schema, request.table, ...chosen.map((c) => c.name)]) {
    const bytes = Buffer.byteLength(name, 'utf8');
    if (bytes >= NAMEDATALEN) {
      throw new PgExtractError(
        ErrorCode.IDENTIFIER_INVALID,
        `${JSON.stringify(name)} has ${bytes} bytes, more than the ${NAMEDATALEN - 1} a PostgreSQL name holds: leave the column out with --columns, or export a view that renames it`,
        { field: 'columns' },
      );
    }
  }
  const [indexes] = await conn.promise().query(
    `SELECT INDEX_NAME AS index_name, COLUMN_NAME AS column_name FROM information_schema.STATISTICS
      WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0 ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
    [request.schema, request.table],
  );
  const unique = new Map<string, string[]>();
  for (const row of indexes as IndexRow[]) unique.set(row.index_name, [...(unique.get(row.index_name) ?? []), row.column_name]);
  const primaryKey = unique.get('PRIMARY') ?? [];
  return {
    schema: request.schema,
    table: request.table,
    columns: chosen.map((c) => ({
      name: c.name,
      pgType: pgTypeOfMysql({ dataType: c.data_type, columnType: c.column_type }),
      notNull: c.nullable === 'NO',
      enumLabels: null,
    })),
    primaryKey,
    key: splitKey(request, byName, primaryKey, unique),
  };
}

/**
 * SELECT denied on the table (MariaDB) or on a column (MySQL): with some of its columns listed, the role holds a grant
 * on those columns only.
 */
const PARTLY_DENIED = new Set([1142, 1143]);

async function readsEveryColumn(conn: Connection, request: TableRequest): Promise<void> {
  try {
    await conn.promise().query(`SELECT * FROM ${quoteQualified(request.schema, request.table)} LIMIT 0`);
  } catch (err) {
    if (!PARTLY_DENIED.has((err as { errno?: number }).errno ?? 0)) throw err;
    throw new PgExtractError(
      ErrorCode.INPUT_INVALID,
      `the source role may read only some columns of ${request.schema}.${request.table} (${(err as Error).message}): name the ones to export with --columns`,
      { field: 'columns', cause: err },
    );
  }
}

function splitKey(request: TableRequest, byName: Map<string, ColumnRow>, primaryKey: string[], unique: Map<string, string[]>): SplitKey | null {
  const integer = (name: string): SplitKey => ({ name, kind: 'integer', sqlType: 'int8' });
  if (request.key !== undefined) {
    const column = byName.get(request.key);
    if (!column) throw new PgExtractError(ErrorCode.COLUMN_NOT_FOUND, `key column ${JSON.stringify(request.key)} does not exist`, { field: 'key' });
    if (!INTEGER_TYPES.has(column.data_type)) {
      throw new PgExtractError(ErrorCode.KEY_TYPE_UNSUPPORTED, `a MySQL split key must be an integer column; ${request.key} is ${column.column_type}`, {
        field: 'key',
      });
    }
    return integer(column.name);
  }
  const candidates = [primaryKey, ...[...unique.values()].filter((cols) => cols.length === 1 && byName.get(cols[0]!)?.nullable === 'NO')];
  const single = candidates.find((cols) => cols.length === 1 && INTEGER_TYPES.has(byName.get(cols[0]!)!.data_type));
  return single ? integer(single[0]!) : null;
}

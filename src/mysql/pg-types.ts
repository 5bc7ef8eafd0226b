/**
 * The PostgreSQL type whose text form a MySQL column's CSV field has, for the data package and its
 * readers (`SourceColumn.pgType`). Only types whose MySQL text PostgreSQL reads identically are
 * mapped, and bytes (binary strings, bit, spatial) as bytea; every other type (time, year, enum, set, …) is described as
 * text. Pure.
 */
interface MysqlColumnType {
  /** information_schema.COLUMNS.DATA_TYPE, e.g. `int`, `decimal`. */
  dataType: string;
  /** COLUMN_TYPE, e.g. `int(10) unsigned`, `decimal(12,2)`. */
  columnType: string;
}

const SIGNED: Record<string, string> = {
  tinyint: 'smallint',
  smallint: 'smallint',
  mediumint: 'integer',
  int: 'integer',
  integer: 'integer',
  bigint: 'bigint',
};
const UNSIGNED: Record<string, string> = {
  tinyint: 'smallint',
  smallint: 'integer',
  mediumint: 'integer',
  int: 'bigint',
  integer: 'bigint',
  bigint: 'numeric(20,0)',
};
/** Written as bytea: binary strings, BIT (its bytes), and spatial types (their WKB). */
const BYTES = new Set([
  'binary',
  'varbinary',
  'tinyblob',
  'blob',
  'mediumblob',
  'longblob',
  'bit',
  'geometry',
  'point',
  'linestring',
  'polygon',
  'multipoint',
  'multilinestring',
  'multipolygon',
  'geometrycollection',
]);

export function pgTypeOfMysql({ dataType, columnType }: MysqlColumnType): string {
  const type = dataType.toLowerCase();
  const unsigned = /\bunsigned\b/i.test(columnType);
  if (Object.hasOwn(SIGNED, type)) return (unsigned ? UNSIGNED : SIGNED)[type]!;
  const decimal = /^decimal\((\d+),(\d+)\)/i.exec(columnType);
  if (decimal) return `numeric(${decimal[1]},${decimal[2]})`;
  if (type === 'float') return 'real';
  if (type === 'double') return 'double precision';
  if (type === 'date') return 'date';
  // Written in the session's UTC, without an offset: a timestamp without time zone.
  if (type === 'datetime' || type === 'timestamp') return 'timestamp without time zone';
  if (type === 'json') return 'json';
  return BYTES.has(type) ? 'bytea' : 'text';
}

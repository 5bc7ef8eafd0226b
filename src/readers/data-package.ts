/**
 * The run's `datapackage.json`: a Frictionless Data Package (https://specs.frictionlessdata.io/)
 * with one resource per exported table, naming its files relative to the package, their CSV
 * dialect, and a Table Schema whose fields keep every value (`string` where a Table Schema type
 * cannot hold all of PostgreSQL's, e.g. infinity or BC dates) and carry the exact PostgreSQL type.
 * Pure, so the workflow's activity and the `reader` command share one shape.
 */
import { parquetColumn } from '../parquet/column-mapping';
import { type ExportFormat, fileCompression } from '../contract/formats';
import type { SourceColumn } from '../contract/source-column';
import { parsePgType } from './pg-type';

/**
 * A NULL is an unquoted empty field and the empty string a quoted one (`""`): PostgreSQL's CSV.
 * Readers that see quoting keep them apart (see README, "Reading the files"); Table Schema's
 * missingValues cannot see quoting, so to a Frictionless reader both are missing.
 */
const NULL_SEQUENCE = '';

export interface TableSchemaField {
  name: string;
  type: 'integer' | 'number' | 'boolean' | 'string';
  format?: 'uuid';
  trueValues?: string[];
  falseValues?: string[];
  /** Extra property: the column's exact PostgreSQL type, `format_type(atttypid, atttypmod)`. */
  pgType: string;
  /** Extra property of Parquet runs: the column's Parquet type (README, "Parquet"). */
  parquetType?: string;
  constraints?: { required?: true; enum?: string[] };
  /** `[]` on NOT NULL columns: PostgreSQL wrote no NULL there, so an empty field is the empty string (Data Package v2's field missingValues). */
  missingValues?: string[];
}

export interface DataPackageResource {
  name: string;
  /** Extra property: the source table, `schema.table` as the catalog names it. */
  pgTable: string;
  path: string[];
  profile: 'tabular-data-resource' | 'data-resource';
  format: 'csv' | 'pgcopy' | 'parquet';
  mediatype: string;
  encoding: 'utf-8';
  /** Whole-file compression: `gz` is Frictionless's own name; `zst` (zstd) is ours, as Frictionless names no zstd. */
  compression?: 'gz' | 'zst';
  description?: string;
  dialect?: { delimiter: ','; quoteChar: '"'; doubleQuote: true; lineTerminator: '\n'; header: boolean; nullSequence: string };
  /** Absent for a table with no columns: a Table Schema needs a field. */
  schema?: { fields: TableSchemaField[]; missingValues: string[]; primaryKey?: string[] };
}

export interface DataPackage {
  profile: 'tabular-data-package' | 'data-package';
  name: string;
  created: string;
  resources: DataPackageResource[];
}

/** What one table's resource is made of. */
export interface ResourceSource {
  schema: string;
  table: string;
  columns: SourceColumn[];
  primaryKey: string[];
  /** File names relative to the package's folder, in partition order. */
  paths: string[];
}

const INTEGERS = new Set(['smallint', 'integer', 'bigint']);

/** The Table Schema field that holds every value of the column as PostgreSQL writes it in CSV. */
function tableSchemaField(column: SourceColumn): TableSchemaField {
  const { base, args, array } = parsePgType(column.pgType);
  const constraints = { ...(column.notNull ? { required: true as const } : {}), ...(column.enumLabels ? { enum: column.enumLabels } : {}) };
  const field = {
    name: column.name,
    pgType: column.pgType,
    ...(Object.keys(constraints).length ? { constraints } : {}),
    ...(column.notNull ? { missingValues: [] } : {}),
  };
  if (array) return { ...field, type: 'string' };
  if (INTEGERS.has(base)) return { ...field, type: 'integer' };
  // A numeric with a typmod holds NaN (Table Schema's "NaN") but never ±Infinity, which PostgreSQL
  // writes as "Infinity" (Table Schema says "INF"); floats and bare numeric may hold them, so they stay text.
  if (base === 'numeric' && args.length > 0) return { ...field, type: 'number' };
  if (base === 'boolean') return { ...field, type: 'boolean', trueValues: ['t'], falseValues: ['f'] };
  if (base === 'uuid') return { ...field, type: 'string', format: 'uuid' };
  return { ...field, type: 'string' };
}

/** A resource name the spec accepts (lower case, `[-a-z0-9._]`); the exact name is in `pgTable`. */
function resourceName(schema: string, table: string): string {
  return `${schema}.${table}`.toLowerCase().replace(/[^-a-z0-9._]/g, '_');
}

const RESOURCE_COMPRESSIONS = { gzip: { compression: 'gz' as const }, zstd: { compression: 'zst' as const }, none: undefined };
const ZSTD_NOTE =
  "zstd-compressed CSV (concatenated frames): Frictionless names no zstd compression and its tools may not read it; `zstd -d` and DuckDB's read_csv (compression 'zstd') do";

export function dataPackageResource(source: ResourceSource, format: ExportFormat): DataPackageResource {
  const files = {
    name: resourceName(source.schema, source.table),
    pgTable: `${source.schema}.${source.table}`,
    path: source.paths,
    encoding: 'utf-8' as const,
    ...(RESOURCE_COMPRESSIONS[fileCompression(format)] ?? {}),
  };
  if (source.columns.length === 0) return { ...files, ...columnless(format) };
  const names = new Set(source.columns.map((c) => c.name));
  const common = {
    ...files,
    schema: {
      fields: source.columns.map(tableSchemaField),
      missingValues: [NULL_SEQUENCE],
      // Only a key whose every column was exported is a key of these files.
      ...(source.primaryKey.length > 0 && source.primaryKey.every((c) => names.has(c)) ? { primaryKey: source.primaryKey } : {}),
    },
  };
  if (format.format === 'parquet') {
    const fields = common.schema.fields.map((f, i) => ({ ...f, parquetType: parquetColumn(source.columns[i]!).parquetType }));
    return {
      ...common,
      schema: { ...common.schema, fields },
      profile: 'data-resource',
      format: 'parquet',
      mediatype: 'application/vnd.apache.parquet',
      description: "Parquet files, one per partition; each holds the columns' names and PostgreSQL types in its key-value metadata (pg_extract.columns)",
    };
  }
  if (format.format === 'binary') {
    return {
      ...common,
      profile: 'data-resource',
      format: 'pgcopy',
      mediatype: 'application/vnd.postgresql.copy-binary',
      description: 'PostgreSQL binary COPY files: read by PostgreSQL only (COPY … FROM … WITH (FORMAT binary)), into columns of exactly these types',
    };
  }
  return {
    ...common,
    profile: 'tabular-data-resource',
    format: 'csv',
    mediatype: 'text/csv',
    ...(fileCompression(format) === 'zstd' ? { description: ZSTD_NOTE } : {}),
    dialect: { delimiter: ',', quoteChar: '"', doubleQuote: true, lineTerminator: '\n', header: format.header, nullSequence: NULL_SEQUENCE },
  };
}

/**
 * A table with no columns: its files hold only its rows' count (an empty CSV line or an empty binary
 * tuple per row), which a Table Schema, needing a field, cannot describe; a plain data resource says so.
 */
function columnless(format: ExportFormat): Pick<DataPackageResource, 'profile' | 'format' | 'mediatype' | 'description'> {
  const binary = format.format === 'binary';
  return {
    profile: 'data-resource',
    format: binary ? 'pgcopy' : 'csv',
    mediatype: binary ? 'application/vnd.postgresql.copy-binary' : 'text/csv',
    description: `a table with no columns: one ${binary ? 'tuple of no fields' : 'empty line'} per row; the manifest counts the rows`,
  };
}

export function dataPackage(name: string, created: string, resources: DataPackageResource[]): DataPackage {
  const tabular = resources.every((r) => r.profile === 'tabular-data-resource');
  // Resource names must be unique; two tables can fold to one (`s."Orders"` and `s.orders`): later ones get -2, -3, …
  const taken = new Set<string>();
  const unique = resources.map((r) => {
    let resourceName = r.name;
    for (let n = 2; taken.has(resourceName); n++) resourceName = `${r.name}-${n}`;
    taken.add(resourceName);
    return resourceName === r.name ? r : { ...r, name: resourceName };
  });
  return { profile: tabular ? 'tabular-data-package' : 'data-package', name: name.toLowerCase().replace(/[^-a-z0-9._]/g, '_'), created, resources: unique };
}

/** The columns of one table's files in file order, with their PostgreSQL types. */
export interface PackagedColumns {
  columns: string[];
  columnTypes: string[];
}

/** Each resource's columns with their types, by its source table (`pgTable`); a table without columns has none. */
export function packagedColumns(pkg: DataPackage): Map<string, PackagedColumns> {
  return new Map(
    pkg.resources.map((r) => {
      const fields = r.schema?.fields ?? [];
      return [r.pgTable, { columns: fields.map((f) => f.name), columnTypes: fields.map((f) => f.pgType) }];
    }),
  );
}

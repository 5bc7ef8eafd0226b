/**
 * Converts one PostgreSQL CSV file (a header line, then rows in the session settings' text forms) into one Parquet
 * file with an in-process DuckDB: read_csv with the read types and casts of
 * {@link parquetColumn}, `COPY … TO (FORMAT parquet)` with the requested compression and row-group
 * size, and the columns' names and PostgreSQL types in the file's key-value metadata. DuckDB streams
 * the CSV and flushes a row group at a time, on one thread, so memory stays flat in table size.
 */
import { ErrorCode, PgExtractError } from '../errors';
import type { ExportFormat } from '../contract/formats';
import { type TableSchemaField, dataPackageResource } from '../readers/data-package';
import { duckdbSelect, literal } from '../readers/duckdb';
import type { SourceColumn } from '../contract/source-column';
import { DEFAULT_PARQUET_COMPRESSION, DEFAULT_ROW_GROUP_ROWS } from '../contract/format-options';
import { UNREPRESENTABLE, parquetColumn } from './column-mapping';

/** Key of the file's key-value metadata that lists `[{ name, pgType }]` in column order. */
const PG_COLUMNS_KEY = 'pg_extract.columns';

const DUCKDB_MEMORY_LIMIT = '128MB';

/**
 * The longest row a conversion reads, at first and at most, as bytes of its CSV line with the line end (DuckDB's
 * `max_line_size` takes lines shorter than it; its default is 2 MiB). DuckDB's CSV buffer must hold one row, and it keeps
 * two buffers of that size per conversion: two conversions of 2.5 M bench rows in one process peaked at 120–123 MB with
 * 1 MiB against 162–175 MB with 8 MiB. So a conversion reads at the first size, and a partition with a longer row is read
 * again at the second (./parquet-output.ts); past that it fails. A row past the buffer fails DuckDB with one of several
 * messages (past two buffers: "Not implemented", or a wrong column count), or, the input's last row, is left out without
 * an error, so the caller tells it by the COPY's own longest row, not by DuckDB.
 */
export const ROW_BYTES_LIMITS = [1 << 20, 8 << 20] as const;

/**
 * A row group also closes at this size, whatever its rows: DuckDB holds one row group, its encoded columns and their
 * compressed pages in its 128 MB, so wide rows (a 150-row table of 1 MiB texts) failed with DuckDB's "Out of Memory
 * Error" before, and still did at 32 MB.
 */
const ROW_GROUP_MAX_BYTES = '16MB';

const CODECS = { zstd: 'zstd', snappy: 'snappy', none: 'uncompressed' } as const;

/** The most of a DuckDB message passed on: enough for one offending value, as PostgreSQL's own errors name one. */
const MESSAGE_CHARS = 500;

/**
 * DuckDB's CSV errors quote the row they stopped at (`Original Line: …`, up to about 10 kB of it, newlines and all):
 * row data, which must not reach a failure (history), a log or the CLI. A message that quotes one keeps only what comes
 * before the quote (`Invalid Input Error: CSV Error on Line: N`); the rest cannot be told apart from the row's text.
 * Any other message (a refused cast names its value, a nested array is shown whole) is cut at {@link MESSAGE_CHARS}.
 */
function withoutRowText(message: string): string {
  const quote = message.indexOf('\nOriginal Line:');
  if (quote >= 0) return `${message.slice(0, quote)} (DuckDB's message quotes the row here: left out)`;
  return message.length > MESSAGE_CHARS ? `${message.slice(0, MESSAGE_CHARS)}… (cut)` : message;
}

/** DuckDB's messages for a value its target type cannot take: ours, a failed cast, a nested array. */
function isUnrepresentable(message: string): boolean {
  return message.includes(UNREPRESENTABLE) || message.startsWith('Conversion Error') || message.includes('not a one-dimensional array');
}

export interface CsvToParquetRequest {
  csv: string;
  parquet: string;
  columns: SourceColumn[];
  format: ExportFormat;
  /** Where DuckDB may spill; removed by the caller. */
  scratch: string;
  /** The longest row's CSV text DuckDB reads: one of {@link ROW_BYTES_LIMITS}. */
  maxRowBytes: number;
  signal?: AbortSignal | undefined;
}

/** Writes the Parquet file and returns the rows DuckDB wrote. */
export async function csvToParquet(request: CsvToParquetRequest): Promise<number> {
  const { csv, parquet, columns, format, scratch, maxRowBytes } = request;
  const resource = dataPackageResource({ schema: '', table: '', columns, primaryKey: [], paths: [] }, { format: 'csv', header: true, gzip: false });
  const byName = new Map(columns.map((c) => [c.name, parquetColumn(c)]));
  const reading = {
    readType: (field: TableSchemaField) => byName.get(field.name)!.readType,
    expression: (field: TableSchemaField) => byName.get(field.name)!.expression,
  };
  const select = duckdbSelect(resource, [csv], reading, [`max_line_size = ${maxRowBytes}`, `buffer_size = ${maxRowBytes}`]);
  const metadata = JSON.stringify(columns.map(({ name, pgType }) => ({ name, pgType })));
  const compression = format.compression ?? DEFAULT_PARQUET_COMPRESSION;
  // The input refuses it (src/contract/format-options.ts); gzip compresses CSV and binary files whole.
  if (compression === 'gzip') throw new PgExtractError(ErrorCode.FORMAT_OPTIONS_INVALID, 'Parquet columns are compressed with zstd, snappy or none');
  const codec = CODECS[compression];
  const options = [
    'FORMAT parquet',
    `COMPRESSION ${codec}`,
    // zstd's fastest level: about a quarter less conversion time than DuckDB's default (3) for files a few percent larger.
    ...(codec === 'zstd' ? ['COMPRESSION_LEVEL 1'] : []),
    `ROW_GROUP_SIZE ${format.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS}`,
    `ROW_GROUP_SIZE_BYTES ${literal(ROW_GROUP_MAX_BYTES)}`,
    `KV_METADATA {${literal(PG_COLUMNS_KEY)}: ${literal(metadata)}}`,
  ];
  // One thread per partition (the partitions are the parallelism) and a memory cap: DuckDB otherwise keeps up to
  // 80% of the machine's memory in buffers; with the cap a conversion holds about 100 MB whatever the table's size.
  // Loaded on first use: DuckDB's library and bindings are about 18 MB of a worker's memory that only Parquet runs need.
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:', {
    threads: '1',
    memory_limit: DUCKDB_MEMORY_LIMIT,
    temp_directory: scratch,
    // DuckDB takes ROW_GROUP_SIZE_BYTES only without it; on its one thread the rows still leave in the CSV's order
    // (checked on a million bench rows), and no order is promised beyond the COPY's own.
    preserve_insertion_order: 'false',
  });
  try {
    const connection = await instance.connect();
    // A cancelled activity stops the conversion instead of waiting for it (the caller then reports the cancellation).
    const interrupt = (): void => connection.interrupt();
    request.signal?.addEventListener('abort', interrupt, { once: true });
    try {
      request.signal?.throwIfAborted();
      const result = await connection.run(`COPY (${select}) TO ${literal(parquet)} (${options.join(', ')})`);
      return Number(result.rowsChanged);
    } catch (err) {
      const message = withoutRowText((err as Error).message ?? String(err));
      // No `cause`: DuckDB's error holds the row's text.
      if (isUnrepresentable(message)) throw new PgExtractError(ErrorCode.PARQUET_VALUE_UNREPRESENTABLE, message);
      throw new Error(message);
    } finally {
      request.signal?.removeEventListener('abort', interrupt);
      connection.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}

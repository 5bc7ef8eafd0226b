/**
 * Copies one planned range of a MySQL table into an output sink, on a session of its own: one
 * SELECT streamed row by row (mysql2 pauses the socket when the sink is slow), written as CSV,
 * counted and hashed as written, committed by the sink. Its window is the orchestrator's UTC
 * clock, taken before the SELECT is sent and after the last byte is stored.
 */
import { pipeline } from 'node:stream/promises';
import type { Connection, FieldPacket } from 'mysql2';
import { ErrorCode, PgExtractError } from '../errors';
import { toUtcTimestamp } from '../lifecycle/utc-timestamp';
import { Digest } from '../postgres/copy-to-output';
import type { PartitionRange } from '../contract/partition-range';
import { quoteIdent, quoteQualified } from '../postgres/sql';
import type { RangeCopy, RangeCopyOptions, ReadHandle } from '../sources/source-adapter';
import { compressStage } from '../storage/file-compression';
import { type OutputSink, discardAfter } from '../storage/output-sink';
import { CsvRows, type MysqlField } from './csv-rows';

/** The columns a MySQL plan names (it always does: only a set's plan names none, and a set reads PostgreSQL). */
function plannedColumns(handle: ReadHandle): string[] {
  if (!handle.table.columns) throw new PgExtractError(ErrorCode.INPUT_INVALID, 'a MySQL range needs the columns its plan names', { field: 'table.columns' });
  return handle.table.columns;
}

/** MySQL protocol column type FLOAT. */
const FLOAT_TYPE = 4;

/**
 * The FLOAT columns among the planned ones (read off an empty result of them). A FLOAT's own text has
 * six significant digits (16777216 reads as 16777200): read as a DOUBLE (`* 1E0`, which every MySQL and MariaDB
 * takes, where CAST … AS DOUBLE came in MySQL 8.0.17), its text keeps the float's value. The plan the range
 * arrives with names its columns only, so their types are read here.
 */
async function floatColumns(conn: Connection, handle: ReadHandle): Promise<Set<string>> {
  const columns = plannedColumns(handle);
  const [, fields] = (await conn.promise().query({
    sql: `SELECT ${columns.map(quoteIdent).join(', ')} FROM ${quoteQualified(handle.table.schema, handle.table.table)} LIMIT 0`,
    rowsAsArray: true,
  })) as unknown as [unknown, MysqlField[]];
  return new Set(columns.filter((_, i) => fields[i]?.columnType === FLOAT_TYPE));
}

/** `SELECT … WHERE …` for `range`, with its bound values as parameters; `floats` are read as DOUBLE. */
function rangeSelect(handle: ReadHandle, range: PartitionRange, floats: ReadonlySet<string> = new Set()): { sql: string; values: string[] } {
  const list = plannedColumns(handle).map((c) => (floats.has(c) ? `(${quoteIdent(c)} * 1E0) AS ${quoteIdent(c)}` : quoteIdent(c)));
  const select = `SELECT ${list.join(', ')} FROM ${quoteQualified(handle.table.schema, handle.table.table)}`;
  if (range.kind === 'all') return { sql: select, values: [] };
  const key = handle.key === null ? null : quoteIdent(handle.key.name);
  if (key === null || range.kind === 'pages')
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `a MySQL range needs a split key (got ${range.kind})`, { field: 'range' });
  if (range.kind === 'nulls') return { sql: `${select} WHERE ${key} IS NULL`, values: [] };
  const conditions: string[] = [];
  const values: string[] = [];
  if (range.lower !== null) {
    conditions.push(`${key} >= ?`);
    values.push(range.lower);
  }
  if (range.upper !== null) {
    conditions.push(`${key} < ?`);
    values.push(range.upper);
  }
  // Open ends still exclude NULL keys: those have their own range.
  return { sql: `${select} WHERE ${conditions.length ? conditions.join(' AND ') : `${key} IS NOT NULL`}`, values };
}

const utcNow = (): string => toUtcTimestamp(new Date(), 'now');

export async function copyMysqlRange(
  conn: Connection,
  handle: ReadHandle,
  range: PartitionRange,
  sink: OutputSink,
  options: RangeCopyOptions,
): Promise<RangeCopy> {
  if (options.format.format !== 'csv') {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, "a MySQL source writes CSV only (binary is PostgreSQL COPY's own format)", { field: 'format' });
  }
  const [[idRow]] = (await conn.promise().query('SELECT CONNECTION_ID() AS id')) as unknown as [{ id: number }[]];
  const { sql, values } = rangeSelect(handle, range, await floatColumns(conn, handle));
  let fields: MysqlField[] = [];
  const startedAt = utcNow();
  // Raw text bytes of every value: the server's own text form, and binary strings byte for byte.
  const query = conn.query({ sql, values, rowsAsArray: true, typeCast: (field) => field.buffer() });
  query.once('fields', (f: FieldPacket[]) => (fields = f as unknown as MysqlField[]));
  const csv = new CsvRows(plannedColumns(handle), () => fields, options.format.header);
  const digest = new Digest(options.onBytes ?? (() => undefined));
  const rows = query.stream({ highWaterMark: 256 });
  // mysql2 reports a connection lost under a streamed query (killed, or cut by the server's net_write_timeout while
  // the sink was slow) only on the connection: the row stream would wait for ever, its activity heartbeating.
  const lost = (err?: Error): void => void rows.destroy(err ?? new Error('the MySQL connection closed mid-read'));
  conn.on('error', lost);
  conn.on('end', lost);
  try {
    const writable = sink.open();
    const compress = compressStage(options.format);
    const stages = compress ? [rows, csv, compress, digest, writable] : [rows, csv, digest, writable];
    await pipeline(stages as unknown as [NodeJS.ReadableStream, NodeJS.WritableStream], options.signal ? { signal: options.signal } : {});
    const written = { bytes: digest.bytes, sha256: digest.hash.digest('hex') };
    const stored = await sink.commit(written);
    return { ...written, ...stored, rows: csv.rows, sessionId: idRow!.id, snapshotDigest: null, startedAt, completedAt: utcNow() };
  } catch (err) {
    // A SELECT abandoned mid-stream leaves rows on the wire: the session cannot be reused.
    conn.destroy();
    await discardAfter(err, sink);
    throw err;
  } finally {
    conn.off('error', lost);
    conn.off('end', lost);
  }
}

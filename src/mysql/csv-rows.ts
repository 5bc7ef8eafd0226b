/**
 * MySQL rows (arrays of the server's own text bytes, or null) as CSV in PostgreSQL COPY's CSV
 * dialect, so a reader or loader cannot tell the two sources' files apart: comma, double quote,
 * `\n` line ends, NULL as an empty unquoted field, an empty string as `""`, a field quoted only
 * when it holds a comma, quote, CR or LF (or is a lone `\.` in a one-column file), quotes doubled.
 * Binary strings (BINARY, VARBINARY, BLOB, BIT, GEOMETRY) are written as PostgreSQL writes bytea: `\x` and hex.
 * A date that names no calendar day (a zero date, `0000-00-00` or a zero year, month or day, or
 * `2024-02-30`), which MySQL keeps where its sql_mode allows, fails the copy: the column is
 * described as a date, and no PostgreSQL reader reads one. A GEOMETRY value is MySQL's own: a
 * 4-byte SRID, then the WKB.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { ErrorCode, PgExtractError } from '../errors';

const COMMA = 0x2c;
const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;
const NEWLINE = Buffer.from('\n');
const QUOTE_BYTE = Buffer.from('"');
const END_OF_DATA = Buffer.from('\\.');

/** MySQL protocol column types that carry bytes (GEOMETRY, 255, too: its SRID and WKB), and the binary character set's number. */
const BYTE_TYPES = new Set([15, 16, 249, 250, 251, 252, 253, 254, 255]);
const BINARY_CHARSET = 63;
/** MySQL protocol column types whose text starts with a `YYYY-MM-DD` date: TIMESTAMP, DATE, DATETIME, NEWDATE. */
const DATE_TYPES = new Set([7, 10, 12, 14]);

/** A column definition as mysql2 reports it in the 'fields' event. */
export interface MysqlField {
  columnType: number;
  characterSet: number;
}

function isBinaryField(field: MysqlField): boolean {
  return field.characterSet === BINARY_CHARSET && BYTE_TYPES.has(field.columnType);
}

/**
 * Whether a date's text names no calendar day: a zero year, month or day (`0000-00-00`, `2026-00-10`, MySQL's zero
 * dates), or a day its month does not have (`2024-02-30`, which MySQL keeps under ALLOW_INVALID_DATES).
 */
function isUnrepresentableDate(value: Buffer): boolean {
  if (value.length < 10) return false;
  const number = (from: number, to: number): number => Number(value.subarray(from, to).toString('latin1'));
  const [year, month, day] = [number(0, 4), number(5, 7), number(8, 10)];
  if (year === 0 || month === 0 || day === 0) return true;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return days === undefined || day > days;
}

function needsQuotes(value: Buffer, singleColumn: boolean): boolean {
  if (value.length === 0) return true;
  for (const byte of value) if (byte === COMMA || byte === QUOTE || byte === LF || byte === CR) return true;
  return singleColumn && value.equals(END_OF_DATA);
}

/** One CSV field, as COPY … (FORMAT csv) writes it. */
function csvField(value: Buffer, singleColumn: boolean): Buffer[] {
  if (!needsQuotes(value, singleColumn)) return [value];
  const parts: Buffer[] = [QUOTE_BYTE];
  let from = 0;
  for (let i = value.indexOf(QUOTE); i !== -1; i = value.indexOf(QUOTE, i + 1)) {
    parts.push(value.subarray(from, i + 1), QUOTE_BYTE);
    from = i + 1;
  }
  parts.push(value.subarray(from), QUOTE_BYTE);
  return parts;
}

/** Rows in, CSV bytes out; counts rows. `fields()` is read at the first row (mysql2 reports fields before rows). */
export class CsvRows extends Transform {
  rows = 0;
  #binary: boolean[] | null = null;
  #dates: boolean[] | null = null;

  constructor(
    private readonly columns: readonly string[],
    private readonly fields: () => readonly MysqlField[],
    header: boolean,
  ) {
    super({ writableObjectMode: true, readableHighWaterMark: 1 << 20 });
    if (header) this.push(this.line(columns.map((c) => Buffer.from(c, 'utf8'))));
  }

  private line(values: readonly (Buffer | null)[]): Buffer {
    const single = this.columns.length === 1;
    const parts: Buffer[] = [];
    values.forEach((value, i) => {
      if (i > 0) parts.push(Buffer.from(','));
      if (value !== null) parts.push(...csvField(value, single));
    });
    parts.push(NEWLINE);
    return Buffer.concat(parts);
  }

  override _transform(row: (Buffer | null)[], _enc: BufferEncoding, done: TransformCallback): void {
    this.#binary ??= this.fields().map(isBinaryField);
    this.#dates ??= this.fields().map((f) => DATE_TYPES.has(f.columnType));
    const binary = this.#binary;
    const invalid = this.#dates.findIndex((date, i) => date && row[i] != null && isUnrepresentableDate(row[i]!));
    if (invalid !== -1) {
      const column = this.columns[invalid]!;
      done(
        new PgExtractError(
          ErrorCode.SOURCE_VALUE_UNREPRESENTABLE,
          `column ${column} holds a MySQL date that names no calendar day (${row[invalid]!.toString('latin1')}), which no PostgreSQL date or timestamp can hold`,
          { field: 'columns' },
        ),
      );
      return;
    }
    this.rows++;
    done(null, this.line(row.map((v, i) => (v !== null && binary[i] ? Buffer.from(`\\x${v.toString('hex')}`) : v))));
  }
}

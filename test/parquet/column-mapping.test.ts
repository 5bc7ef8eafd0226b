/**
 * The type mappings the Parquet writer and the DuckDB reader share, and the statement's reading of
 * the files: which arrays become lists, numeric's DECIMAL, columns DuckDB cannot tell apart, and
 * DuckDB itself reading CSV as PostgreSQL writes it from folders whose names look like patterns.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { ErrorCode, PgExtractError } from '../../src/errors';
import { parquetColumn, requireParquetColumns } from '../../src/parquet/column-mapping';
import type { DataPackageResource } from '../../src/readers/data-package';
import { duckdbStatement, literalPath, numericType } from '../../src/readers/duckdb';

const column = (name: string, pgType: string) => ({ name, pgType, notNull: false, enumLabels: null });

describe('column mapping and the DuckDB statement', () => {
  it('numeric(p,s) is DECIMAL up to 38 digits, a scale above the precision too; wider stays text', () => {
    assert.equal(numericType([10, 2]), 'DECIMAL(10,2)');
    assert.equal(numericType([2, 5]), 'DECIMAL(5,5)');
    assert.equal(numericType([38]), 'DECIMAL(38,0)');
    assert.equal(numericType([39, 2]), null);
    assert.equal(numericType([]), null);
    assert.equal(parquetColumn(column('n', 'numeric(2,5)')).parquetType, 'DECIMAL(5,5)');
  });

  it('arrays of numbers, booleans and uuids are lists; text arrays stay their PostgreSQL text', () => {
    assert.equal(parquetColumn(column('a', 'integer[]')).parquetType, 'LIST<INT32>');
    assert.equal(parquetColumn(column('a', 'numeric(10,2)[]')).parquetType, 'LIST<DECIMAL(10,2)>');
    for (const pgType of ['text[]', 'character varying(5)[]', 'character(3)[]']) {
      assert.deepEqual(parquetColumn(column('a', pgType)), { readType: 'VARCHAR', expression: '"a" AS "a"', parquetType: 'STRING' }, pgType);
    }
  });

  it('Parquet refuses a table without columns, or with two names that differ only in case, with FORMAT_OPTIONS_INVALID', () => {
    const refused = (table: string | null, columns: { name: string }[], message: RegExp) =>
      assert.throws(
        () => requireParquetColumns(table, columns),
        (err: unknown) => err instanceof PgExtractError && err.code === ErrorCode.FORMAT_OPTIONS_INVALID && message.test(err.message),
      );
    refused('s.t', [], /^s\.t has no columns/);
    refused('s.t', [{ name: 'id' }, { name: 'A' }, { name: 'a' }], /^s\.t has columns "A" and "a"/);
    refused(null, [{ name: 'Name' }, { name: 'NAME' }], /^the table has columns "Name" and "NAME"/);
    requireParquetColumns('s.t', [{ name: 'a' }, { name: 'b' }, { name: 'É' }, { name: 'é' }]);
  });

  it('paths are literal: *, ? and [ become one-character classes', () => {
    assert.equal(literalPath('/out/q?x/b[1]/*.csv'), "'/out/q[?]x/b[[]1]/[*].csv'");
    assert.equal(literalPath("/out/it's"), "'/out/it''s'");
  });

  it("DuckDB reads a CSV whose first line holds a \\r, and a text array's text, from a folder named like a pattern, and no other", async () => {
    const root = await mkdtemp(join(tmpdir(), 'pgx-mapping-'));
    try {
      for (const [folder, body] of [
        ['q?x', `1,"a\r\nb","{it's,x]}"\n2,c,"{'a,b',(c}"\n`],
        ['qax', '3,other,{}\n'],
      ] as const) {
        await mkdir(join(root, folder));
        await writeFile(join(root, folder, 'part-0000.csv'), body);
      }
      const resource = {
        name: 't',
        pgTable: 's.t',
        path: ['part-0000.csv'],
        format: 'csv',
        dialect: { delimiter: ',', quoteChar: '"', doubleQuote: true, lineTerminator: '\n', header: false, nullSequence: '' },
        schema: {
          fields: [
            { name: 'id', type: 'integer', pgType: 'integer' },
            { name: 'v', type: 'string', pgType: 'text' },
            { name: 'ta', type: 'string', pgType: 'text[]' },
          ],
        },
      } as unknown as DataPackageResource;
      const statement = duckdbStatement(resource, [join(root, 'q?x', 'part-0000.csv')]);
      const duck = await (await DuckDBInstance.create(':memory:')).connect();
      const read = await duck.runAndReadAll(statement.replace(/;$/, ''));
      assert.deepEqual(read.getRowsJson(), [
        [1, 'a\r\nb', "{it's,x]}"],
        [2, 'c', "{'a,b',(c}"],
      ]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

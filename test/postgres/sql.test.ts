/** SQL safety: one quoting helper, literal composition, snapshot id format, user-given names. */
import assert from 'node:assert/strict';
import { ErrorCode } from '../../src/errors';
import fc from 'fast-check';
import { formatTableName, isSnapshotId, parseColumnName, parseTableName, splitNameList } from '../../src/contract/identifiers';
import { quoteIdent, quoteLiteral, snapshotIdLiteral } from '../../src/postgres/sql';

describe('SQL safety', () => {
  it('quotes identifiers and doubles embedded quotes', () => {
    assert.equal(quoteIdent('Order'), '"Order"');
    assert.equal(quoteIdent('a"b'), '"a""b"');
  });

  for (const bad of ['', 'x'.repeat(64), 'a\0b']) {
    it(`refuses the identifier ${JSON.stringify(bad.slice(0, 10))}… with IDENTIFIER_INVALID`, () => {
      assert.throws(() => quoteIdent(bad), { code: ErrorCode.IDENTIFIER_INVALID });
    });
  }

  it('composes literals safely with quotes and backslashes', () => {
    assert.equal(quoteLiteral("it's"), "'it''s'");
    assert.equal(quoteLiteral('a\\b'), "E'a\\\\b'");
  });

  it('accepts pg_export_snapshot() ids and writes them as a quoted literal', () => {
    assert.equal(snapshotIdLiteral('00000003-0000001B-1'), "'00000003-0000001B-1'");
    assert.ok(isSnapshotId('00000004-00000002-12'));
    assert.ok(isSnapshotId('00000003-1'), 'the pre-13 format');
  });

  for (const bad of ["00000003-0000001B-1'; --", '00000003-0000001b-1', ' 00000003-0000001B-1', '0000003-0000001B-1', '', null, 42]) {
    it(`rejects the snapshot id ${JSON.stringify(bad)} with SNAPSHOT_ID_INVALID`, () => {
      assert.throws(() => snapshotIdLiteral(bad), { code: ErrorCode.SNAPSHOT_ID_INVALID });
    });
  }

  it('parses table names as PostgreSQL does: unquoted parts fold, quoted parts keep case', () => {
    assert.deepEqual(parseTableName('Sales.Orders'), { schema: 'sales', table: 'orders' });
    assert.deepEqual(parseTableName('"Sales"."Order ""X"""'), { schema: 'Sales', table: 'Order "X"' });
    assert.deepEqual(parseTableName('orders'), { schema: 'public', table: 'orders' });
    assert.equal(parseColumnName('"Mixed Case"', 'key'), 'Mixed Case');
  });

  it('formats catalog names as a user would type them, quoted only where needed: they parse back to the same names', () => {
    assert.equal(formatTableName({ schema: 'sales', table: 'orders' }), 'sales.orders');
    assert.equal(formatTableName({ schema: 'Sales', table: 'Order "X"' }), '"Sales"."Order ""X"""');
    assert.equal(formatTableName({ schema: 's', table: 'café' }), 's."café"');
    // Any name PostgreSQL allows (no NUL, under 64 bytes), with the characters that need quoting among them.
    const part = fc
      .string({ unit: fc.constantFrom('a', 'Z', '_', '1', '$', ' ', '"', '.', ',', '-', 'é', '表'), minLength: 1, maxLength: 20 })
      .filter((n) => Buffer.byteLength(n) < 64);
    fc.assert(fc.property(part, part, (schema, table) => assert.deepEqual(parseTableName(formatTableName({ schema, table })), { schema, table })));
  });

  it('splits a typed list of names on the commas outside double quotes', () => {
    assert.deepEqual(splitNameList('s.a,s.b'), ['s.a', 's.b']);
    const quoted = '"a,b".t,s."x ""y,z"""';
    assert.deepEqual(splitNameList(quoted), ['"a,b".t', 's."x ""y,z"""']);
    assert.deepEqual(
      splitNameList(quoted).map((n) => parseTableName(n)),
      [
        { schema: 'a,b', table: 't' },
        { schema: 's', table: 'x "y,z"' },
      ],
    );
    assert.deepEqual(splitNameList('a,,b'), ['a', '', 'b'], 'an empty name is kept, for the parser to refuse');
  });

  for (const bad of ['a.b.c', 'a;b', "a'b", 'a b', '1abc', '"unterminated', 'a.', '.b', 'a--b', 'a/*b*/']) {
    it(`rejects the table name ${JSON.stringify(bad)} with IDENTIFIER_INVALID`, () => {
      assert.throws(() => parseTableName(bad), { code: ErrorCode.IDENTIFIER_INVALID, field: 'table' });
    });
  }
});

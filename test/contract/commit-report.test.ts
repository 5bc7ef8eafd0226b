/**
 * The commit report's parser, pure: what it accepts comes back as exactly the report, and each way
 * a report can be wrong is INPUT_INVALID naming its field. The live fuzz test
 * (test/faults/hostile-commit.test.ts) sends the refused kinds through the signal and the update.
 */
import assert from 'node:assert/strict';
import { parseCommitReport } from '../../src/contract/commit-report';
import { ErrorCode, PgExtractError } from '../../src/errors';

const refusedAt = (raw: unknown, field: string): void =>
  assert.throws(
    () => parseCommitReport(raw),
    (err: unknown) => err instanceof PgExtractError && err.code === ErrorCode.INPUT_INVALID && err.field === field && err.message.startsWith(`${field}: `),
    JSON.stringify(raw),
  );

describe('commit report', () => {
  it('accepts each outcome, with or without an operation id of up to 200 characters, and returns a fresh object of those keys', () => {
    for (const outcome of ['committed', 'failed', 'unknown'] as const) {
      const raw = { outcome };
      const parsed = parseCommitReport(raw);
      assert.deepEqual(parsed, { outcome });
      assert.notEqual(parsed, raw);
    }
    assert.deepEqual(parseCommitReport({ outcome: 'failed', operationId: 'x'.repeat(200) }), { outcome: 'failed', operationId: 'x'.repeat(200) });
    assert.deepEqual(parseCommitReport({ outcome: 'unknown', operationId: undefined }), { outcome: 'unknown' }, 'an absent id, as JSON would drop it');
    // Counted in code points: a character beyond the BMP is two UTF-16 units and one character.
    for (const operationId of ['😀'.repeat(200), `${'x'.repeat(199)}😀`, `${'x'.repeat(199)}\ud800`]) {
      assert.deepEqual(parseCommitReport({ outcome: 'committed', operationId }), { outcome: 'committed', operationId });
    }
  });

  it('refuses a report that is not a plain object, a bad or inherited outcome, a bad operation id, and any other own key', () => {
    for (const raw of [null, undefined, 'committed', 3, ['committed']]) refusedAt(raw, 'input');
    for (const outcome of ['maybe', 'Committed', 'constructor', 'toString', '__proto__', 1, null, undefined]) refusedAt({ outcome }, 'outcome');
    refusedAt(Object.create({ outcome: 'committed' }), 'outcome');
    refusedAt({ outcome: 'committed', operationId: 'x'.repeat(201) }, 'operationId');
    refusedAt({ outcome: 'committed', operationId: '😀'.repeat(201) }, 'operationId');
    refusedAt({ outcome: 'committed', operationId: `${'x'.repeat(199)}\ud800\ud800` }, 'operationId');
    refusedAt({ outcome: 'committed', operationId: 7 }, 'operationId');
    refusedAt({ outcome: 'committed', note: 'x' }, 'input');
    refusedAt(JSON.parse('{"outcome":"committed","__proto__":{"outcome":"committed"}}'), 'input');
  });

  it('names a few extra keys, cut short, however many and however long a client sends', () => {
    const many = Object.fromEntries([['outcome', 'committed'], ...Array.from({ length: 120_000 }, (_, i) => [`key${i}`, 1])]);
    assert.throws(
      () => parseCommitReport(many),
      (err: Error) => err.message === 'input: unrecognized keys: "key0", "key1", "key2" and 119997 more',
    );
    const long = { outcome: 'committed', ['k'.repeat(1 << 20)]: 1 };
    assert.throws(
      () => parseCommitReport(long),
      (err: Error) => err.message === `input: unrecognized key: "${'k'.repeat(40)}…"`,
    );
  });
});

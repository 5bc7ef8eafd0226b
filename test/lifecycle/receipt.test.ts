/** Receipt invariants: each violation is rejected with its own stable code. */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ErrorCode, PgExtractError } from '../../src/errors';
import { createReceipt, type ReceiptFields } from '../../src/lifecycle';

const TOKEN = `sha256:${'ab'.repeat(32)}`;
const base: ReceiptFields = { extractionStartedAt: '2026-01-01T00:00:00.000001Z', clockAuthority: 'postgresql.server' };

function codeOf(fields: ReceiptFields): string | undefined {
  try {
    createReceipt(fields);
    return undefined;
  } catch (err) {
    assert.ok(err instanceof PgExtractError);
    return err.code;
  }
}

describe('ExtractionLifecycleReceipt', () => {
  it('is deeply frozen, evidence included', () => {
    const r = createReceipt({ ...base, evidence: [{ name: 'f', rows: 1, bytes: 2, sha256: 'a'.repeat(64) }] });
    assert.ok(Object.isFrozen(r));
    assert.ok(Object.isFrozen(r.evidence));
    assert.ok(Object.isFrozen(r.evidence[0]));
    assert.equal(r.extractionCompletedAt, null);
  });

  it('takes row evidence without bytes or checksum (a read that wrote no file), but never half of file evidence', () => {
    const rows = createReceipt({ ...base, evidence: [{ name: 's.t', rows: 7, bytes: null, sha256: null }] });
    assert.deepEqual(rows.evidence, [{ name: 's.t', rows: 7, bytes: null, sha256: null }]);
    assert.throws(() => createReceipt({ ...base, evidence: [{ name: 'f', rows: 1, bytes: 2, sha256: null } as never] }), PgExtractError);
    assert.throws(() => createReceipt({ ...base, evidence: [{ name: 'f', rows: 1, bytes: null, sha256: 'a'.repeat(64) } as never] }), PgExtractError);
  });

  it('normalizes UTC offsets and keeps microseconds', () => {
    const r = createReceipt({ ...base, extractionStartedAt: '2026-01-01T00:00:00.123456+00:00' });
    assert.equal(r.extractionStartedAt, '2026-01-01T00:00:00.123456Z');
  });

  const rejections: [string, ReceiptFields, ErrorCode][] = [
    ['a naive timestamp', { ...base, extractionStartedAt: '2026-01-01T00:00:00' }, ErrorCode.RECEIPT_TIMESTAMP_NAIVE],
    ['a non-UTC offset', { ...base, extractionStartedAt: '2026-01-01T00:00:00+02:00' }, ErrorCode.RECEIPT_TIMESTAMP_NOT_UTC],
    ['an impossible date', { ...base, extractionStartedAt: '2026-02-30T00:00:00Z' }, ErrorCode.RECEIPT_TIMESTAMP_INVALID],
    ['an invalid Date', { ...base, extractionStartedAt: new Date(Number.NaN) }, ErrorCode.RECEIPT_TIMESTAMP_INVALID],
    ['a blank clock authority', { ...base, clockAuthority: '  ' }, ErrorCode.RECEIPT_INVALID],
    ['a 129-character clock authority', { ...base, clockAuthority: 'x'.repeat(129) }, ErrorCode.RECEIPT_INVALID],
    ['completion before start', { ...base, extractionCompletedAt: '2026-01-01T00:00:00Z' }, ErrorCode.RECEIPT_COMPLETED_BEFORE_START],
    [
      'a snapshot before start',
      { ...base, snapshotAcquiredAt: '2025-12-31T23:59:59Z', snapshotAuthority: 'postgresql.repeatable_read' },
      ErrorCode.RECEIPT_SNAPSHOT_BEFORE_START,
    ],
    [
      'a snapshot after completion',
      { ...base, extractionCompletedAt: '2026-01-01T00:00:01Z', snapshotAcquiredAt: '2026-01-01T00:00:02Z', snapshotAuthority: 'a' },
      ErrorCode.RECEIPT_SNAPSHOT_AFTER_COMPLETION,
    ],
    [
      'a snapshot authority without a snapshot',
      { ...base, snapshotAuthority: 'postgresql.repeatable_read' },
      ErrorCode.RECEIPT_SNAPSHOT_AUTHORITY_WITHOUT_SNAPSHOT,
    ],
    ['a snapshot without an authority', { ...base, snapshotAcquiredAt: '2026-01-01T00:00:01Z' }, ErrorCode.RECEIPT_SNAPSHOT_WITHOUT_AUTHORITY],
    [
      'an empty source token',
      { ...base, snapshotAcquiredAt: '2026-01-01T00:00:01Z', snapshotAuthority: 'a', sourceToken: '' },
      ErrorCode.RECEIPT_SOURCE_TOKEN_EMPTY,
    ],
    ['a source token without a snapshot', { ...base, sourceToken: TOKEN }, ErrorCode.RECEIPT_SOURCE_TOKEN_WITHOUT_SNAPSHOT],
    [
      'a raw (undigested) source token',
      { ...base, snapshotAcquiredAt: '2026-01-01T00:00:01Z', snapshotAuthority: 'a', sourceToken: '00000003-0000001B-1' },
      ErrorCode.RECEIPT_INVALID,
    ],
  ];
  for (const [what, fields, code] of rejections) {
    it(`rejects ${what} with ${code}`, () => assert.equal(codeOf(fields), code));
  }

  it('property: any ordered start ≤ snapshot ≤ completion is accepted, any inversion rejected', () => {
    const iso = (micros: number): string => `2026-01-01T00:00:00.${String(micros).padStart(6, '0')}Z`;
    const micros = fc.integer({ min: 0, max: 999_999 });
    fc.assert(
      fc.property(micros, micros, micros, (s, p, e) => {
        const fields = {
          extractionStartedAt: iso(s),
          clockAuthority: 'postgresql.server',
          snapshotAcquiredAt: iso(p),
          snapshotAuthority: 'postgresql.repeatable_read',
          sourceToken: TOKEN,
          extractionCompletedAt: iso(e),
        };
        assert.equal(codeOf(fields) === undefined, s <= p && p <= e);
      }),
    );
  });
});

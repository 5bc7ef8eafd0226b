/** The range planner is pure: ranges ordered, disjoint, covering [MIN, MAX]; NULLs once; balanced by quantiles. */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { autoPartitionCount, planKeyRanges, planPageRanges } from '../../src/planning/range-planner';
import { type KeyKind, type KeyRange, MAX_BOUND_LENGTH } from '../../src/contract/partition-range';

function keyRanges(kind: KeyKind, min: string, max: string, n: number, quantiles: string[] = []): KeyRange[] {
  return planKeyRanges({ kind, min, max, rowCount: 1_000_000, hasNulls: false, quantiles }, n) as KeyRange[];
}

/** The first range is open below, the last open above, and each upper bound is the next lower bound. */
function assertChain(ranges: KeyRange[], n: number): void {
  assert.ok(ranges.length >= 1 && ranges.length <= n);
  assert.equal(ranges[0]!.lower, null);
  assert.equal(ranges.at(-1)!.upper, null);
  for (let i = 1; i < ranges.length; i++) assert.equal(ranges[i]!.lower, ranges[i - 1]!.upper);
}

describe('range planner', () => {
  it('integer keys: n ranges with strictly increasing cuts inside (MIN, MAX]', () => {
    const r = keyRanges('integer', '1', '1000', 4);
    assertChain(r, 4);
    assert.deepEqual(
      r.slice(1).map((x) => x.lower),
      ['251', '501', '751'],
    );
  });

  it('property: for any integer bounds and n, ranges chain, cuts increase and lie inside (MIN, MAX]', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }), fc.bigInt({ min: 0n, max: 2n ** 62n }), fc.integer({ min: 1, max: 64 }), (lo, span, n) => {
        const hi = lo + span;
        const r = keyRanges('integer', String(lo), String(hi), n);
        assertChain(r, n);
        const cuts = r.slice(1).map((x) => BigInt(x.lower!));
        cuts.forEach((c, i) => {
          assert.ok(c > lo && c <= hi);
          if (i > 0) assert.ok(c > cuts[i - 1]!);
        });
      }),
    );
  });

  it('a key range narrower than n gives fewer, non-empty ranges', () => {
    const r = keyRanges('integer', '5', '6', 8);
    assertChain(r, 8);
    assert.deepEqual(
      r.map((x) => x.lower),
      [null, '6'],
    );
  });

  it('date, timestamp, timestamptz, numeric and uuid keys split in their own units', () => {
    assert.deepEqual(
      keyRanges('date', '2026-01-01', '2026-01-04', 2).map((x) => x.upper),
      ['2026-01-03', null],
    );
    assert.deepEqual(
      keyRanges('timestamp', '2026-01-01 00:00:00', '2026-01-01 00:00:01', 2).map((x) => x.upper),
      ['2026-01-01 00:00:00.500000', null],
    );
    assert.deepEqual(
      keyRanges('timestamptz', '2026-01-01 00:00:00+00', '2026-01-01 00:00:00.000003+00', 2).map((x) => x.upper),
      ['2026-01-01 00:00:00.000002+00', null],
    );
    assert.deepEqual(
      keyRanges('numeric', '0.5', '10.5', 2).map((x) => x.upper),
      ['5.5', null],
    );
    const u = keyRanges('uuid', '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 2);
    assert.equal(u[0]!.upper, '80000000-0000-0000-0000-000000000000');
  });

  it('quantiles replace the uniform split, so a skewed key gets balanced ranges', () => {
    const r = keyRanges('integer', '1', '1000000', 4, ['10', '20', '30']);
    assert.deepEqual(
      r.map((x) => x.lower),
      [null, '10', '20', '30'],
    );
  });

  it('text keys: cuts only from quantiles (in the server collation order), repeats and MIN dropped, never interpolated', () => {
    const text = (min: string, max: string, n: number, quantiles: string[]) => keyRanges('text', min, max, n, quantiles).map((r) => r.upper);
    assert.deepEqual(text('', 'zz', 4, ['b', 'Ä', 'x']), ['b', 'Ä', 'x', null], 'collation order is trusted as sampled, not re-sorted by bytes');
    assert.deepEqual(text('', 'zz', 4, ['', '', 'm']), ['m', null], 'a cut equal to MIN would make an empty range');
    assert.deepEqual(text('a', 'b', 8, ['a', 'a', 'b', 'b', 'b', 'b', 'b']), ['b', null], 'too few distinct quantiles: fewer ranges');
    assert.deepEqual(text('a', 'z', 4, []), [null], 'no quantiles: one range, no interpolation');
    assert.deepEqual(text('a', 'z', 3, ['b', 'y'.repeat(MAX_BOUND_LENGTH + 1)]), ['b', null], 'a cut too long for workflow history is left out');
  });

  it('property: text cuts keep the sampled order, are distinct and never equal MIN', () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { minLength: 1, maxLength: 40 }), fc.integer({ min: 2, max: 16 }), (values, n) => {
        const sorted = [...values].sort();
        const quantiles = Array.from({ length: n - 1 }, (_, i) => sorted[Math.floor(((i + 1) * sorted.length) / n)]!);
        const r = keyRanges('text', sorted[0]!, sorted.at(-1)!, n, quantiles);
        assertChain(r, n);
        const cuts = r.slice(1).map((x) => x.lower!);
        assert.ok(!cuts.includes(sorted[0]!));
        assert.equal(new Set(cuts).size, cuts.length);
        assert.deepEqual(cuts, [...cuts].sort());
      }),
    );
  });

  it('NULL keys get one partition of their own; all-NULL and empty tables are handled', () => {
    const withNulls = planKeyRanges({ kind: 'integer', min: '1', max: '100', rowCount: null, hasNulls: true }, 3);
    assert.deepEqual(withNulls.at(-1), { kind: 'nulls' });
    assert.equal(withNulls.filter((r) => r.kind === 'nulls').length, 1);
    assert.deepEqual(planKeyRanges({ kind: 'integer', min: null, max: null, rowCount: 5, hasNulls: true }, 4), [{ kind: 'nulls' }]);
    assert.deepEqual(planKeyRanges({ kind: 'integer', min: null, max: null, rowCount: 0, hasNulls: false }, 4), [{ kind: 'all' }]);
  });

  it('unparseable bounds (infinity, NaN) take their cuts from the readable quantiles, never interpolated; without any, one open range', () => {
    assert.deepEqual(keyRanges('date', '-infinity', 'infinity', 4), [{ kind: 'key', lower: null, upper: null }]);
    // Before, one NaN or infinity at an end made the whole table one range.
    const upper = (kind: KeyKind, min: string, max: string, quantiles: string[]) => keyRanges(kind, min, max, 4, quantiles).map((r) => r.upper);
    assert.deepEqual(upper('numeric', '1', 'NaN', ['250', '500', '750']), ['250', '500', '750', null]);
    assert.deepEqual(upper('numeric', '1', 'NaN', ['500', 'NaN', 'NaN']), ['500', null], 'NaN quantiles are dropped');
    assert.deepEqual(upper('date', '-infinity', '2026-12-31', ['2020-01-01', '2021-01-01', '2022-01-01']), ['2020-01-01', '2021-01-01', '2022-01-01', null]);
    assert.deepEqual(upper('numeric', '1', '1000', ['250', '1001', '500']), ['250', '500', null], 'a cut beyond a readable MAX is still dropped');
  });

  it('page ranges cover every page and leave the last one open', () => {
    assert.deepEqual(planPageRanges(10, 3), [
      { kind: 'pages', fromPage: 0, toPage: 4 },
      { kind: 'pages', fromPage: 4, toPage: 8 },
      { kind: 'pages', fromPage: 8, toPage: null },
    ]);
    assert.deepEqual(planPageRanges(1, 4), [{ kind: 'all' }]);
  });

  it('auto partition count is rows / target, clamped to [1, max]', () => {
    assert.equal(autoPartitionCount(0, { targetRows: 100, max: 8 }), 1);
    assert.equal(autoPartitionCount(250, { targetRows: 100, max: 8 }), 3);
    assert.equal(autoPartitionCount(10_000, { targetRows: 100, max: 8 }), 8);
  });
});

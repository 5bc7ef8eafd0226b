/** Groups of small tables are pure: every small table in exactly one group, a group per lane, bounded work, big tables left alone. */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { GROUP_BYTES, SMALL_TABLE_BYTES, TABLE_COST_BYTES, groupSmallTables } from '../../src/planning/table-groups';

const MB = 1024 * 1024;

describe('table groups', () => {
  it('the bench shape: big tables keep their ranges, 200 small ones fill one group per lane, each in plan order', () => {
    const tables = Array.from({ length: 200 }, (_, i) => ({ name: i, bytes: Math.max(0.1 * MB, 60 * MB * 0.8 ** i) }));
    const { big, groups } = groupSmallTables(tables, 8);
    assert.deepEqual(
      big.map((t) => t.name),
      tables.filter((t) => t.bytes >= SMALL_TABLE_BYTES).map((t) => t.name),
    );
    assert.equal(groups.length, 8);
    for (const g of groups)
      assert.deepEqual(
        g,
        [...g].sort((a, b) => a.name - b.name),
      );
    const sizes = groups.map((g) => g.length);
    assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 8, `groups balanced: ${sizes.join(' ')}`);
  });

  it('fewer small tables than lanes: one table per group', () => {
    const { big, groups } = groupSmallTables([{ bytes: 100 }, { bytes: 10 }], 8);
    assert.deepEqual(big, []);
    assert.deepEqual(groups, [[{ bytes: 100 }], [{ bytes: 10 }]]);
  });

  it('any set: each small table once, and no group over GROUP_BYTES and one table of work', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 * SMALL_TABLE_BYTES }), { maxLength: 1000 }), fc.integer({ min: 1, max: 64 }), (sizes, lanes) => {
        const tables = sizes.map((bytes, id) => ({ id, bytes }));
        const { big, groups } = groupSmallTables(tables, lanes);
        const grouped = groups.flat();
        assert.deepEqual(
          [...big, ...grouped].map((t) => t.id).sort((a, b) => a - b),
          tables.map((t) => t.id),
        );
        assert.ok(grouped.every((t) => t.bytes < SMALL_TABLE_BYTES));
        assert.ok(groups.every((g) => g.length > 0));
        assert.ok(groups.length >= Math.min(grouped.length, lanes), 'a group per lane while there are tables enough');
        for (const g of groups) assert.ok(g.reduce((w, t) => w + t.bytes + TABLE_COST_BYTES, 0) <= GROUP_BYTES + SMALL_TABLE_BYTES + TABLE_COST_BYTES);
      }),
    );
  });
});

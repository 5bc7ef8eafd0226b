/** The part-size plan keeps S3's limits and lets one object reach at least what 64 MiB parts did. */
import assert from 'node:assert/strict';
import { MAX_PART_SIZE, PartSizes, S3_MAX_PARTS, S3_MIN_PART_SIZE } from '../../src/storage/s3-part-sizes';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

describe('S3 part sizes', () => {
  it('start at 5 MiB, double every 1000 parts, stop at 128 MiB, and reach 640 GiB within 10 000 parts', () => {
    const sizes = new PartSizes();
    assert.deepEqual(
      [1, 1000, 1001, 2001, 3001, 4001, 5001, 10_000].map((n) => sizes.of(n) / MiB),
      [5, 5, 10, 20, 40, 80, 128, 128],
    );
    let total = 0;
    for (let n = 1; n <= S3_MAX_PARTS; n++) {
      const size = sizes.of(n);
      assert.ok(size >= S3_MIN_PART_SIZE && size <= 5 * GiB, `part ${n} is ${size} bytes`);
      assert.ok(n === 1 || size >= sizes.of(n - 1), `part ${n} is smaller than part ${n - 1}`);
      total += size;
    }
    assert.ok(total >= 640 * GiB, `${total / GiB} GiB`);
  });

  it('raise a first size under S3 minimum to 5 MiB and never pass the cap', () => {
    const sizes = new PartSizes({ firstPartSize: MiB, partsPerSize: 1 });
    assert.equal(sizes.of(1), S3_MIN_PART_SIZE);
    assert.equal(sizes.of(2), 2 * S3_MIN_PART_SIZE);
    assert.equal(sizes.of(50), MAX_PART_SIZE);
  });
});

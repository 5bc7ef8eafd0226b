/**
 * The COPY block pool: handed-back blocks serve later takes, and a spare that no take reached for a
 * whole two-second interval is freed (its memory detached, so V8's next scavenge returns it), down
 * to the 16 that two partitions use; blocks taken or handed back in that time stay.
 */
import assert from 'node:assert/strict';
import { setTimeout } from 'node:timers/promises';
import { BLOCK, BlockPool } from '../../src/postgres/block-pool';

const freed = (blocks: Buffer[]) => blocks.filter((b) => b.buffer.byteLength === 0).length;

describe('COPY block pool', function () {
  this.timeout(20_000);

  it('serves a handed-back block again, whole, and ignores anything but a whole block', () => {
    const pool = new BlockPool();
    const block = pool.take();
    assert.equal(block.length, BLOCK);
    pool.keep(block.subarray(0, 10));
    pool.keep(Buffer.alloc(BLOCK + 1).subarray(0, BLOCK));
    assert.equal(pool.spareCount, 0, 'a part of a block, or a view of a larger buffer, is not kept');
    pool.keep(block);
    assert.equal(pool.take(), block);
  });

  it('frees a spare once no COPY took it for a whole interval of two seconds, oldest first, down to 16', async () => {
    const pool = new BlockPool();
    const blocks = Array.from({ length: 40 }, () => pool.take());
    for (const b of blocks) pool.keep(b);
    assert.equal(pool.spareCount, 40);
    // The interval began when the 17th was kept; the 23 after it were handed back (in use) during it.
    await setTimeout(2_200);
    assert.equal(pool.spareCount, 23);
    assert.equal(freed(blocks.slice(0, 17)), 17, 'the 17 held all interval are freed');
    assert.equal(freed(blocks.slice(17)), 0);
    // In the next interval COPYs take 20 and hand them back: only the 3 below them were unused.
    const busy = Array.from({ length: 20 }, () => pool.take());
    for (const b of busy.reverse()) pool.keep(b);
    await setTimeout(2_000);
    assert.equal(pool.spareCount, 20);
    assert.equal(freed(blocks.slice(17, 20)), 3, 'the 3 untouched ones go');
    assert.equal(freed(blocks.slice(20)), 0, 'the 20 taken in the interval keep their memory');
    await setTimeout(2_000);
    assert.equal(pool.spareCount, 16, 'then down to 16');
    await setTimeout(2_200);
    assert.equal(pool.spareCount, 16, 'which stay, however long they are unused');
    assert.equal(freed(blocks), 24);
  });

  it('frees a block handed back beyond the 64 it keeps', () => {
    const pool = new BlockPool();
    const blocks = Array.from({ length: 65 }, () => pool.take());
    for (const b of blocks) pool.keep(b);
    assert.equal(pool.spareCount, 64);
    assert.equal(freed(blocks), 1);
  });
});

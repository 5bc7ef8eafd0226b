/**
 * The COPY block pool: handed-back blocks serve later takes, and a spare that no take reached for a
 * whole two-second interval is freed (its memory detached, so V8's next scavenge returns it), down
 * to the 16 that two partitions use; blocks taken or handed back in that time stay.
 */
import assert from 'node:assert/strict';
import { setTimeout } from 'node:timers/promises';
import { BLOCK, keepBlock, spareBlockCount, takeBlock } from '../../src/postgres/block-pool';

const freed = (blocks: Buffer[]) => blocks.filter((b) => b.buffer.byteLength === 0).length;

describe('COPY block pool', function () {
  this.timeout(20_000);

  it('serves a handed-back block again, whole', () => {
    const block = takeBlock();
    assert.equal(block.length, BLOCK);
    keepBlock(block);
    assert.equal(takeBlock(), block);
  });

  it('frees a spare once no COPY took it for a whole interval of two seconds, oldest first, down to 16', async () => {
    const blocks = Array.from({ length: 40 }, () => takeBlock());
    for (const b of blocks) keepBlock(b);
    assert.equal(spareBlockCount(), 40);
    // The interval began when the 17th was kept; the 23 after it were handed back (in use) during it.
    await setTimeout(2_200);
    assert.equal(spareBlockCount(), 23);
    assert.equal(freed(blocks.slice(0, 17)), 17, 'the 17 held all interval are freed');
    assert.equal(freed(blocks.slice(17)), 0);
    // In the next interval a COPY takes 5 and hands them back: the newest 5, which stay.
    const busy = Array.from({ length: 5 }, () => takeBlock());
    for (const b of busy.reverse()) keepBlock(b);
    await setTimeout(2_000);
    assert.equal(spareBlockCount(), 16, 'down to 16');
    assert.equal(freed(blocks.slice(17, 24)), 7, 'the oldest 7 of the untouched 18 go');
    assert.equal(freed(blocks.slice(24)), 0, 'the newest 16, the busy ones among them, keep their memory');
    await setTimeout(2_200);
    assert.equal(spareBlockCount(), 16, 'the 16 stay, however long they are unused');
    assert.equal(freed(blocks), 24);
  });
});

/**
 * freeMemory detaches only a Buffer that is a whole ArrayBuffer of its own; a slice of one, or a
 * small Buffer from Node's shared pool, is left as it is (other views may still use that memory).
 */
import assert from 'node:assert/strict';
import { freeMemory } from '../../src/storage/free-memory';

describe('freeMemory', () => {
  it('frees a whole Buffer of its own: every view of it is then empty', () => {
    for (const buffer of [Buffer.allocUnsafeSlow(1 << 20), Buffer.allocUnsafe(5 << 20)]) {
      const view = buffer.subarray(10, 20);
      freeMemory(buffer);
      assert.equal(buffer.buffer.byteLength, 0);
      assert.equal(view.length, 0);
    }
  });

  it('leaves a slice, and a Buffer from the shared pool, alone', () => {
    const whole = Buffer.alloc(1 << 20, 7);
    const slice = whole.subarray(0, 1024);
    freeMemory(slice);
    assert.equal(whole.length, 1 << 20);
    assert.equal(whole[1000], 7);
    const pooled = Buffer.from('small');
    freeMemory(pooled);
    assert.equal(pooled.toString(), 'small');
  });
});

/** The worker's PG_EXTRACT_DIRECT_IO setting: on by default, off on request, anything else refused with a code. */
import assert from 'node:assert/strict';
import { outputDirectIo } from '../../src/config';
import { ErrorCode } from '../../src/errors';

describe('PG_EXTRACT_DIRECT_IO', () => {
  it('is on unless set to off', () => {
    assert.equal(outputDirectIo({}), true);
    assert.equal(outputDirectIo({ PG_EXTRACT_DIRECT_IO: '' }), true);
    assert.equal(outputDirectIo({ PG_EXTRACT_DIRECT_IO: 'on' }), true);
    assert.equal(outputDirectIo({ PG_EXTRACT_DIRECT_IO: 'off' }), false);
  });

  it('refuses any other value with INPUT_INVALID naming the variable', () => {
    for (const value of ['0', 'false', 'OFF', 'yes']) {
      assert.throws(() => outputDirectIo({ PG_EXTRACT_DIRECT_IO: value }), { code: ErrorCode.INPUT_INVALID, field: 'PG_EXTRACT_DIRECT_IO' });
    }
  });
});

/** Glob patterns on table names (--include / --exclude): `*` any run of characters, `?` one character, the rest literal. */
import assert from 'node:assert/strict';
import { globMatcher } from '../../src/contract/table-selection';

describe('table name globs', () => {
  it('* any run, ? one character (one outside the BMP too), everything else literal', () => {
    const matches = (pattern: string, names: string[]) => names.filter(globMatcher(pattern));
    assert.deepEqual(matches('t_*', ['t_', 't_a', 'T_a', 'xt_a', 't_a\nb']), ['t_', 't_a', 't_a\nb']);
    // Before, `?` matched one UTF-16 half: t_😀 needed two of them.
    assert.deepEqual(matches('t_?', ['t_a', 't_😀', 't_ab', 't_']), ['t_a', 't_😀']);
    assert.deepEqual(matches('a.b+(c)[d]{e}|^$\\', ['a.b+(c)[d]{e}|^$\\', 'aXb+(c)[d]{e}|^$\\']), ['a.b+(c)[d]{e}|^$\\']);
  });
});

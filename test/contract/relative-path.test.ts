/**
 * A name that only starts with two dots (`..nightly`) stays inside its root: as an output folder, as
 * the run folder a workflow id names, and under the root's confinement; `..` and `../…` climb out.
 */
import assert from 'node:assert/strict';
import { checkWorkflowId } from '../../src/client';
import { parseExtractionInput } from '../../src/contract/extraction-input';
import { climbsOut } from '../../src/contract/relative-path';
import { ErrorCode, errorCodeOf } from '../../src/errors';
import { confinedPath } from '../../src/storage/output-root';

describe('relative paths that climb out', () => {
  it('.. and ../… climb out; ..nightly, ... and a/.. do not', () => {
    assert.deepEqual(['..', '../x', '..nightly', '...', '.', 'a/..', 'x..'].map(climbsOut), [true, true, false, false, false, false, false]);
  });

  it('an output folder ..data is inside the root; ../data and a/../../b are not', () => {
    assert.equal(parseExtractionInput({ table: 'a.b', outDir: '..data' }).outDir, '..data');
    for (const outDir of ['../data', 'a/../../b', '..']) {
      assert.throws(
        () => parseExtractionInput({ table: 'a.b', outDir }),
        (err) => errorCodeOf(err) === ErrorCode.OUTPUT_PATH_ESCAPES_ROOT,
      );
    }
  });

  it('the run folder of a workflow id such as ..nightly is confined to the root; an id of . or .. is refused', () => {
    // Before, a path whose first name started with two dots was taken for one leaving the root: the run failed at its prepare.
    assert.equal(confinedPath('/out', '..nightly/run-1/attempt-1'), '/out/..nightly/run-1/attempt-1');
    assert.throws(
      () => confinedPath('/out', '../run-1/attempt-1'),
      (err) => errorCodeOf(err) === ErrorCode.OUTPUT_PATH_ESCAPES_ROOT,
    );
    checkWorkflowId('..nightly');
    for (const id of ['.', '..']) {
      assert.throws(
        () => checkWorkflowId(id),
        (err) => errorCodeOf(err) === ErrorCode.INPUT_INVALID,
      );
    }
  });
});

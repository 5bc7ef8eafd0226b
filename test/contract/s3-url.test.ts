/**
 * `s3://` locations as input: a credential written into one is refused without being echoed (the
 * message reaches history and logs), and a prefix too long for the run's keys beneath it is
 * refused before anything starts.
 */
import assert from 'node:assert/strict';
import { parseExtractionInput, parseNewRunInput } from '../../src/contract/extraction-input';
import { S3_PREFIX_MAX_BYTES, parseS3Url } from '../../src/contract/s3-url';
import { ErrorCode, PgExtractError } from '../../src/errors';

describe('S3 locations', () => {
  it('a user:secret@ in the location is refused, and the secret is in no message', () => {
    for (const url of ['s3://AKIAEXAMPLE:wJalrXUtnFEMIK7MDENG@bucket/prefix', 's3://token@bucket']) {
      assert.throws(
        () => parseS3Url(url),
        (err: Error) => /names no credentials/.test(err.message) && !err.message.includes('wJalr') && !err.message.includes('token'),
      );
      assert.throws(
        () => parseExtractionInput({ table: 's.t', outDir: url }),
        (err: unknown) => err instanceof PgExtractError && err.field === 'outDir' && !JSON.stringify({ m: err.message, d: err }).includes('wJalr'),
      );
    }
  });

  it('a path segment in the key (.., ., empty) is OUTPUT_PATH_ESCAPES_ROOT; any other bad location is INPUT_INVALID', () => {
    for (const [outDir, code] of [
      ['s3://bucket/a/../b', ErrorCode.OUTPUT_PATH_ESCAPES_ROOT],
      ['s3://bucket/a//b', ErrorCode.OUTPUT_PATH_ESCAPES_ROOT],
      ['s3://Bad_Bucket/a', ErrorCode.INPUT_INVALID],
      ['s3://key:secret@bucket/a', ErrorCode.INPUT_INVALID],
      [`s3://bucket/${'k'.repeat(901)}`, ErrorCode.INPUT_INVALID],
    ] as const) {
      assert.throws(
        () => parseExtractionInput({ table: 's.t', outDir }),
        (err: unknown) => err instanceof PgExtractError && err.code === code && err.field === 'outDir',
        outDir,
      );
    }
  });

  it(`a new run's prefix of up to ${S3_PREFIX_MAX_BYTES} bytes is taken; a longer one is INPUT_INVALID on outDir`, () => {
    const prefix = (bytes: number) => `s3://bucket/${'é'.repeat(bytes / 2)}`;
    assert.equal(parseNewRunInput({ table: 's.t', outDir: prefix(S3_PREFIX_MAX_BYTES) }).outDir, prefix(S3_PREFIX_MAX_BYTES));
    // A step of a run already running (started by an earlier version) parses it as it did then.
    assert.equal(parseExtractionInput({ table: 's.t', outDir: prefix(S3_PREFIX_MAX_BYTES + 2) }).outDir, prefix(S3_PREFIX_MAX_BYTES + 2));
    assert.throws(
      () => parseNewRunInput({ table: 's.t', outDir: prefix(S3_PREFIX_MAX_BYTES + 2) }),
      (err: unknown) => err instanceof PgExtractError && err.code === ErrorCode.INPUT_INVALID && err.field === 'outDir',
    );
  });

  it("a new run's prefix that listings would not give back as written, or shaped like a run's attempt folder, is INPUT_INVALID on outDir", () => {
    const refused = (outDir: string, why: RegExp) =>
      assert.throws(
        () => parseNewRunInput({ table: 's.t', outDir }),
        (err: unknown) => err instanceof PgExtractError && err.code === ErrorCode.INPUT_INVALID && err.field === 'outDir' && why.test(err.message),
        JSON.stringify(outDir),
      );
    for (const key of ['q1\x01', 'tab\there', 'del\x7f', 'c1\x85', 'back\\slash', 'non\ufffe', 'lone\ud800', 'lone\udc00x'])
      refused(`s3://bucket/${key}`, /control character, a backslash or a non-character/);
    const run = '0193a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d';
    for (const key of [`${run}/attempt-1`, `nightly/${run}/attempt-12/more`]) refused(`s3://bucket/${key}`, /the shape of a run's attempt folder/);
    // Taken: a run's own folder as a parent (its runs get folders of their own beside the attempts), names that only look alike, other characters.
    for (const key of [run, `nightly/${run}`, `attempt-1`, `${run}x/attempt-1`, 'spaces and %+#?&<\'" fine', 'emoji 🎉 ünïcode'])
      assert.equal(parseNewRunInput({ table: 's.t', outDir: `s3://bucket/${key}` }).outDir, `s3://bucket/${key}`);
    // A step of a run already running parses what it was given then.
    assert.equal(parseExtractionInput({ table: 's.t', outDir: 's3://bucket/back\\slash' }).outDir, 's3://bucket/back\\slash');
  });
});

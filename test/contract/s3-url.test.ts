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
});

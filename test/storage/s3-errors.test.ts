/**
 * S3 failures as stable codes: what retrying can cure stays S3_REQUEST_FAILED (Temporal retries
 * it); what the server refuses itself, or a missing credential, fails at once with a code that
 * says whose fault it is.
 */
import assert from 'node:assert/strict';
import { ErrorCode, PgExtractError, codeInfo } from '../../src/errors';
import { s3ErrorCode, s3Failure } from '../../src/storage/s3-errors';

/** An error as the SDK makes it: a name, and the HTTP status of the answer when there was one. */
const answer = (name: string, status?: number) =>
  Object.assign(new Error('from the SDK'), { name, ...(status ? { $metadata: { httpStatusCode: status } } : {}) });

describe('S3 error codes', () => {
  for (const [what, err, code] of [
    ['a missing bucket', answer('NoSuchBucket', 404), ErrorCode.S3_BUCKET_NOT_FOUND],
    ['a refused signature', answer('SignatureDoesNotMatch', 403), ErrorCode.S3_ACCESS_DENIED],
    ['any 403', answer('Unknown', 403), ErrorCode.S3_ACCESS_DENIED],
    // checkBucket calls it S3_ACCESS_DENIED before anything is written; later it may be a provider's timeout.
    ['no credentials from the chain', answer('CredentialsProviderError'), ErrorCode.S3_REQUEST_FAILED],
    // checkBucket calls it S3_UNREACHABLE before anything is written; later it may be a server restarting.
    ['an endpoint nobody listens on', Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), ErrorCode.S3_REQUEST_FAILED],
    ['a host name that does not resolve', Object.assign(new Error('getaddrinfo'), { code: 'ENOTFOUND' }), ErrorCode.S3_REQUEST_FAILED],
    ['a bucket in another region (a redirect the SDK could not follow)', answer('PermanentRedirect', 301), ErrorCode.S3_REQUEST_REFUSED],
    ['a request signed for the wrong region', answer('AuthorizationHeaderMalformed', 400), ErrorCode.S3_REQUEST_REFUSED],
    ['any other 400', answer('Unknown', 400), ErrorCode.S3_REQUEST_REFUSED],
    ['a key that is gone', answer('NoSuchKey', 404), ErrorCode.S3_REQUEST_FAILED],
    ['a socket the server stopped reading (400 RequestTimeout)', answer('RequestTimeout', 400), ErrorCode.S3_REQUEST_FAILED],
    ['throttling', answer('SlowDown', 503), ErrorCode.S3_REQUEST_FAILED],
    ['too many requests', answer('TooManyRequests', 429), ErrorCode.S3_REQUEST_FAILED],
    ['a conflicting operation', answer('OperationAborted', 409), ErrorCode.S3_REQUEST_FAILED],
    ['a body cut short in transit', answer('IncompleteBody', 400), ErrorCode.S3_REQUEST_FAILED],
    ['bytes damaged in transit', answer('BadDigest', 400), ErrorCode.S3_REQUEST_FAILED],
    ['a payload hash damaged in transit', answer('XAmzContentSHA256Mismatch', 400), ErrorCode.S3_REQUEST_FAILED],
    ['a server error', answer('InternalError', 500), ErrorCode.S3_REQUEST_FAILED],
    ['a silent connection (the client gave up)', answer('TimeoutError'), ErrorCode.S3_REQUEST_FAILED],
  ] as const) {
    it(`${what}: ${code}`, () => assert.equal(s3ErrorCode(err), code));
  }

  it('refused and denied requests are not retried; failed ones are', () => {
    assert.equal(codeInfo(ErrorCode.S3_REQUEST_REFUSED).retryable, false);
    assert.equal(codeInfo(ErrorCode.S3_ACCESS_DENIED).retryable, false);
    assert.equal(codeInfo(ErrorCode.S3_REQUEST_FAILED).retryable, true);
  });

  it('a failure names the request and the answer, never the SDK message', () => {
    const err = s3Failure(
      Object.assign(answer('AuthorizationHeaderMalformed', 400), { message: 'the region us-east-1 is wrong; expecting eu-west-1' }),
      'bucket b',
    );
    assert.ok(err instanceof PgExtractError);
    assert.equal(err.code, ErrorCode.S3_REQUEST_REFUSED);
    assert.equal(err.message, 'bucket b: AuthorizationHeaderMalformed (HTTP 400)');
  });
});

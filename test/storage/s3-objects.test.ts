/**
 * The S3 room against a real S3 server (SeaweedFS): multipart objects that appear only when
 * complete, parts that grow, chunks handed back once copied, receipts of exactly the stored bytes, aborted uploads that leave
 * nothing (also after a part fails mid-way), checked deletes, and coded errors for wrong
 * credentials, a missing bucket and an unreachable endpoint.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, ListMultipartUploadsCommand, type S3Client } from '@aws-sdk/client-s3';
import { errorCodeOf } from '../../src/errors';
import { abortUploads, checkBucket, deleteObject, listObjects, objectExists } from '../../src/storage/s3-objects';
import { S3ObjectWriter } from '../../src/storage/s3-object-writer';
import { S3Store } from '../../src/storage/s3-store';
import { s3ClientFromEnv } from '../../src/storage/s3-client';
import { s3Client, s3Service } from '../support/s3';
import { eventually } from '../support/eventually';

const BUCKET = 'pgx-storage-test';
const MiB = 1 << 20;
/** The first part size the default plan uses (s3-part-sizes). */
const FIRST_PART = 5 * MiB;

/** `blocks` blocks of `blockSize` random bytes (cheap to make, not compressible by accident). */
function bytes(blocks: number, blockSize = MiB): { stream: () => Readable; sha256: string; size: number } {
  const block = randomBytes(blockSize);
  const hash = createHash('sha256');
  for (let i = 0; i < blocks; i++) hash.update(block);
  return {
    stream: () =>
      Readable.from(
        (function* () {
          for (let i = 0; i < blocks; i++) yield block;
        })(),
      ),
    sha256: hash.digest('hex'),
    size: blocks * blockSize,
  };
}

async function readBack(client: S3Client, key: string): Promise<string> {
  const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  const hash = createHash('sha256');
  for await (const chunk of got.Body as Readable) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The sizes of the parts `client` uploads, in the order it sends them. */
function recordPartSizes(client: S3Client): number[] {
  const sizes: number[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      if (context.commandName === 'UploadPartCommand') sizes.push((args.input as { ContentLength: number }).ContentLength);
      return next(args);
    },
    { step: 'initialize' },
  );
  return sizes;
}

/** Makes `client` sign UploadPart requests from part `from` on wrongly, as a revoked credential would. */
function breakSignaturesFromPart(client: S3Client, from: number): void {
  // The deserialize step runs after signing, on the request as it will be sent.
  client.middlewareStack.add(
    (next, context) => (args) => {
      const request = args.request as { headers: Record<string, string> };
      if (context.commandName === 'UploadPartCommand' && (args.input as { PartNumber: number }).PartNumber >= from) {
        const signed = request.headers.authorization!;
        request.headers.authorization = signed.slice(0, -1) + (signed.endsWith('0') ? '1' : '0');
      }
      return next(args);
    },
    { step: 'deserialize' },
  );
}

async function pendingUploads(client: S3Client, prefix: string): Promise<number> {
  return ((await client.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: prefix }))).Uploads ?? []).length;
}

describe('S3 objects (live SeaweedFS)', function () {
  this.timeout(120_000);
  let client: S3Client;
  before(async () => {
    await (await s3Service()).createBucket(BUCKET);
    client = await s3Client();
  });

  it('a 3-part object appears only when complete, with the sha256 and the server checksum of what was written', async () => {
    const data = bytes((FIRST_PART / MiB) * 2 + 3);
    const location = { bucket: BUCKET, key: 'big/part-0000.csv' };
    const writer = new S3ObjectWriter(client, location);
    let sawMidway = true;
    const source = data.stream();
    source.once('data', () => void objectExists(client, location).then((e) => (sawMidway = e)));
    await pipeline(source, writer.open());
    const stored = await writer.commit({ bytes: data.size, sha256: data.sha256 });
    assert.equal(sawMidway, false, 'not visible while uploading');
    assert.equal(stored.location, `s3://${BUCKET}/big/part-0000.csv`);
    assert.match(stored.etag ?? '', /^[0-9a-f]{32}-3$/, 'three parts');
    assert.equal(await readBack(client, location.key), data.sha256);
    assert.equal(await pendingUploads(client, 'big/'), 0);
  });

  it('parts grow as planned, and an object of parts of different sizes reads back as written', async () => {
    const recording = await s3Client();
    const sent = recordPartSizes(recording);
    // Blocks of 1 MiB + 3 bytes, so chunks straddle the part boundaries.
    const data = bytes(36, MiB + 3);
    const writer = new S3ObjectWriter(recording, { bucket: BUCKET, key: 'grow/part-0000.csv' }, { firstPartSize: 5 * MiB, partsPerSize: 2 });
    await pipeline(data.stream(), writer.open());
    const stored = await writer.commit({ bytes: data.size, sha256: data.sha256 });
    assert.deepEqual(sent, [5 * MiB, 5 * MiB, 10 * MiB, 10 * MiB, data.size - 30 * MiB]);
    assert.match(stored.etag ?? '', /^[0-9a-f]{32}-5$/, 'five parts');
    assert.equal(await readBack(client, 'grow/part-0000.csv'), data.sha256);
    assert.equal(await pendingUploads(client, 'grow/'), 0);
  });

  it('hands each chunk back once it is copied into a part: a chunk overwritten at once changes nothing stored', async () => {
    // Chunks of 1 MiB + 3 bytes straddle the 5 MiB parts; each is its own buffer, as a COPY's blocks are.
    const block = randomBytes(MiB + 3);
    const chunks = Array.from({ length: 12 }, () => Buffer.from(block));
    const sha256 = createHash('sha256').update(Buffer.concat(chunks)).digest('hex');
    const handedBack: Buffer[] = [];
    const writer = new S3ObjectWriter(client, { bucket: BUCKET, key: 'recycle/part-0000.csv' });
    await pipeline(
      Readable.from(chunks),
      writer.open((chunk) => handedBack.push(chunk.fill(0))),
    );
    await writer.commit({ bytes: 12 * block.length, sha256 });
    assert.equal(await readBack(client, 'recycle/part-0000.csv'), sha256);
    assert.ok(handedBack.length === chunks.length && handedBack.every((chunk, i) => chunk === chunks[i]), 'every chunk, in order, each once');
  });

  it('an object of exactly one part is a 1-part upload whose composite server checksum (-1) is ours', async () => {
    const data = bytes(5);
    const writer = new S3ObjectWriter(client, { bucket: BUCKET, key: 'one/part-0000.csv' }, { firstPartSize: 5 * MiB });
    await pipeline(data.stream(), writer.open());
    const stored = await writer.commit({ bytes: data.size, sha256: data.sha256 });
    assert.match(stored.etag ?? '', /^[0-9a-f]{32}-1$/);
    assert.equal(await readBack(client, 'one/part-0000.csv'), data.sha256);
  });

  it('a part that fails while the next fills fails the stream at once, and discard leaves no upload behind', async () => {
    const failing = await s3Client();
    breakSignaturesFromPart(failing, 2);
    const writer = new S3ObjectWriter(failing, { bucket: BUCKET, key: 'fail/part-0000.csv' }, { firstPartSize: 5 * MiB });
    const stream = writer.open();
    const failed = once(stream, 'error');
    // Part 1 uploads, part 2 is shipped and rejected; nothing more is written nor ended.
    const block = randomBytes(MiB);
    for (let i = 0; i < 11; i++) stream.write(block);
    const [err] = (await failed) as [unknown];
    assert.equal(errorCodeOf(err), 'S3_ACCESS_DENIED');
    assert.match((err as Error).message, /uploading part 2 of s3:\/\/pgx-storage-test\/fail\/part-0000\.csv/);
    assert.equal(await pendingUploads(client, 'fail/'), 1, 'the upload is there until discarded');
    await writer.discard();
    assert.equal(await pendingUploads(client, 'fail/'), 0);
    assert.equal(await objectExists(client, writer.object), false);
  });

  it("bytes past the upload's last part fail the stream with S3_OBJECT_TOO_LARGE before any part beyond is sent, and discard leaves no upload", async () => {
    const writer = new S3ObjectWriter(client, { bucket: BUCKET, key: 'toolarge/part-0000.csv' }, { firstPartSize: 5 * MiB, maxParts: 2 });
    const stream = writer.open();
    const failed = once(stream, 'error');
    const block = randomBytes(MiB);
    for (let i = 0; i < 11; i++) stream.write(block);
    const [err] = (await failed) as [unknown];
    assert.equal(errorCodeOf(err), 'S3_OBJECT_TOO_LARGE');
    assert.match((err as Error).message, /s3:\/\/pgx-storage-test\/toolarge\/part-0000\.csv would be larger than an object of 2 parts \(10485760 bytes\)/);
    await writer.discard();
    assert.equal(await pendingUploads(client, 'toolarge/'), 0);
    assert.equal(await objectExists(client, writer.object), false);
    // Exactly the last part's bytes fit.
    const fits = new S3ObjectWriter(client, { bucket: BUCKET, key: 'toolarge/part-0001.csv' }, { firstPartSize: 5 * MiB, maxParts: 2 });
    const data = bytes(10);
    await pipeline(data.stream(), fits.open());
    assert.equal((await fits.commit({ bytes: data.size, sha256: data.sha256 })).location, `s3://${BUCKET}/toolarge/part-0001.csv`);
  });

  it('a server checksum that disagrees with ours fails the commit with S3_CHECKSUM_MISMATCH', async () => {
    const data = bytes(2);
    const writer = new S3ObjectWriter(client, { bucket: BUCKET, key: 'mismatch/x.csv' });
    await pipeline(data.stream(), writer.open());
    await assert.rejects(
      writer.commit({ bytes: data.size, sha256: createHash('sha256').update('other bytes').digest('hex') }),
      (err) => errorCodeOf(err) === 'S3_CHECKSUM_MISMATCH',
    );
  });

  it('on a server that reports no checksum, the stored size is still checked against the bytes written', async () => {
    const blind = await s3Client();
    blind.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        if (context.commandName === 'HeadObjectCommand') delete (result.output as { ChecksumSHA256?: string }).ChecksumSHA256;
        return result;
      },
      { step: 'initialize' },
    );
    const data = bytes(2);
    const writer = new S3ObjectWriter(blind, { bucket: BUCKET, key: 'blind/x.csv' });
    await pipeline(data.stream(), writer.open());
    // Before, a server without checksums left the commit nothing to compare: any size passed.
    await assert.rejects(writer.commit({ bytes: data.size + 1, sha256: data.sha256 }), (err) => errorCodeOf(err) === 'S3_CHECKSUM_MISMATCH');
    assert.equal((await writer.commit({ bytes: data.size, sha256: data.sha256 })).location, `s3://${BUCKET}/blind/x.csv`);
  });

  it('a discarded writer leaves neither an object nor an upload; a killed one is aborted by abortUploads', async () => {
    const data = bytes(FIRST_PART / MiB + 8);
    const discarded = new S3ObjectWriter(client, { bucket: BUCKET, key: 'gone/a.csv' });
    const source = data.stream();
    let sent = 0;
    source.on('data', (c: Buffer) => {
      sent += c.length;
      if (sent > FIRST_PART + 4 * MiB) source.destroy(new Error('writer died'));
    });
    await assert.rejects(pipeline(source, discarded.open()));
    await discarded.discard();
    assert.equal(await objectExists(client, discarded.object), false);
    assert.equal(await pendingUploads(client, 'gone/'), 0);

    // A writer that is never committed nor discarded (its process was killed) leaves an upload behind.
    // It never ends: a stream that ended could complete its upload before the test saw it pending.
    const orphan = new S3ObjectWriter(client, { bucket: BUCKET, key: 'gone/b.csv' });
    const stream = orphan.open();
    const block = randomBytes(MiB);
    for (let i = 0; i <= FIRST_PART / MiB; i++) stream.write(block);
    await eventually(async () => (await pendingUploads(client, 'gone/')) > 0, 'the upload started', { intervalMs: 100 });
    stream.destroy();
    assert.ok((await abortUploads(client, { bucket: BUCKET, key: 'gone' })) >= 1);
    assert.equal(await pendingUploads(client, 'gone/'), 0);
    assert.deepEqual(await listObjects(client, { bucket: BUCKET, key: 'gone' }), []);
  });

  it('a delete is a release only once the object is checked gone', async () => {
    const data = bytes(1);
    const writer = new S3ObjectWriter(client, { bucket: BUCKET, key: 'del/x.csv' });
    await pipeline(data.stream(), writer.open());
    await writer.commit({ bytes: data.size, sha256: data.sha256 });
    assert.deepEqual(await deleteObject(client, writer.object), { url: `s3://${BUCKET}/del/x.csv`, released: true, code: null });
    assert.equal(await objectExists(client, writer.object), false);
  });

  it('a request the server refuses is S3_REQUEST_REFUSED; a server that never answers fails the request instead of waiting for ever', async () => {
    const refusing = createServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/xml' });
      res.end('<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region is wrong</Message></Error>');
    });
    const silent = createServer(() => undefined);
    try {
      const endpoint = async (server: Server) => {
        server.listen(0, '127.0.0.1');
        await once(server, 'listening');
        return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      };
      const refused = await s3Client({ AWS_ENDPOINT_URL_S3: await endpoint(refusing) });
      await assert.rejects(checkBucket(refused, { bucket: BUCKET, key: '' }), (err) => errorCodeOf(err) === 'S3_REQUEST_REFUSED');
      const env = { ...(await s3Service()).env, AWS_ENDPOINT_URL_S3: await endpoint(silent) };
      const hung = s3ClientFromEnv(env, { idleMs: 300 });
      await assert.rejects(checkBucket(hung, { bucket: BUCKET, key: '' }), (err) => errorCodeOf(err) === 'S3_REQUEST_FAILED');
      // A writer whose upload cannot start fails, and its discard (which waits for its requests) returns: it has nothing to abort.
      const writer = new S3ObjectWriter(hung, { bucket: BUCKET, key: 'hung/x.csv' });
      await assert.rejects(pipeline(bytes(FIRST_PART / MiB + 1).stream(), writer.open()), (err) => errorCodeOf(err) === 'S3_REQUEST_FAILED');
      await writer.discard();
    } finally {
      refusing.close();
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('an object whose completion was applied but never answered is deleted by its discard', async () => {
    const lossy = await s3Client();
    // The server completes the upload; the answer is lost on the way back.
    lossy.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        if (context.commandName === 'CompleteMultipartUploadCommand') throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
        return result;
      },
      { step: 'deserialize' },
    );
    const writer = new S3ObjectWriter(lossy, { bucket: BUCKET, key: 'lost/x.csv' }, { firstPartSize: 5 * MiB });
    await assert.rejects(pipeline(bytes(6).stream(), writer.open()), (err) => errorCodeOf(err) === 'S3_REQUEST_FAILED');
    assert.equal(await objectExists(client, writer.object), true, 'the server did complete it');
    await writer.discard();
    assert.equal(await objectExists(client, writer.object), false);
    assert.equal(await pendingUploads(client, 'lost/'), 0);
  });

  it('a release of a discarded folder leaves no object in it, named or not, and reports each one deleted; a prefix removal reports its objects', async () => {
    const store = new S3Store(() => client);
    const write = async (key: string) => {
      const data = bytes(1);
      const writer = new S3ObjectWriter(client, { bucket: BUCKET, key });
      await pipeline(data.stream(), writer.open());
      await writer.commit({ bytes: data.size, sha256: data.sha256 });
    };
    // More unnamed objects than one round of removals sends at once (32).
    const unnamed = Array.from({ length: 40 }, (_, i) => `disc/run/attempt-1/part-0001-batch-${String(i).padStart(5, '0')}.csv`);
    await write('disc/run/attempt-1/part-0000.csv');
    for (const key of unnamed) await write(key);
    await write('disc/run/attempt-10/part-0000.csv');
    const report = await store.release({
      paths: [`s3://${BUCKET}/disc/run/attempt-1/part-0000.csv`],
      sweepFolders: [],
      discardFolders: [`s3://${BUCKET}/disc/run/attempt-1`],
    });
    assert.deepEqual(report.failures, []);
    assert.deepEqual(report.deleted.sort(), [`s3://${BUCKET}/disc/run/attempt-1/part-0000.csv`, ...unnamed.map((key) => `s3://${BUCKET}/${key}`)]);
    assert.deepEqual(
      await listObjects(client, { bucket: BUCKET, key: 'disc/run' }),
      ['disc/run/attempt-10/part-0000.csv'],
      'another folder of the same run is not this one',
    );

    await write('disc/run/attempt-10/part-0000-batch-00000.csv');
    await write('disc/run/attempt-10/part-0000-batch-00001.csv');
    assert.deepEqual((await store.removeStartingWith(`s3://${BUCKET}/disc/run/attempt-10/part-0000-batch-`)).sort(), [
      `s3://${BUCKET}/disc/run/attempt-10/part-0000-batch-00000.csv`,
      `s3://${BUCKET}/disc/run/attempt-10/part-0000-batch-00001.csv`,
    ]);
  });

  it('no credentials at all is S3_ACCESS_DENIED when the bucket is checked; an upload gone since it was listed is no failure to abort', async () => {
    const anonymous = await s3Client();
    const none = Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' });
    anonymous.middlewareStack.add(() => () => Promise.reject(none), { step: 'initialize' });
    await assert.rejects(checkBucket(anonymous, { bucket: BUCKET, key: '' }), (err) => errorCodeOf(err) === 'S3_ACCESS_DENIED');

    const racing = await s3Client();
    // The upload completes (or is aborted by someone else) between the listing and the abort.
    racing.middlewareStack.add(
      (next, context) => (args) =>
        context.commandName === 'AbortMultipartUploadCommand'
          ? Promise.reject(Object.assign(new Error('gone'), { name: 'NoSuchUpload', $metadata: { httpStatusCode: 404 } }))
          : next(args),
      { step: 'initialize' },
    );
    // A writer that shipped its first part and never ends (its process was killed) leaves an upload behind.
    const orphan = new S3ObjectWriter(client, { bucket: BUCKET, key: 'raced/a.csv' }, { firstPartSize: 5 * MiB });
    const stream = orphan.open();
    const block = randomBytes(MiB);
    for (let i = 0; i <= FIRST_PART / MiB; i++) stream.write(block);
    await eventually(async () => (await pendingUploads(client, 'raced/')) > 0, 'the upload started', { intervalMs: 100 });
    stream.destroy();
    assert.equal(await abortUploads(racing, { bucket: BUCKET, key: 'raced' }), 1);
    await abortUploads(client, { bucket: BUCKET, key: 'raced' });
  });

  it('a denied delete while removing an earlier try keeps its stable code', async () => {
    const denying = await s3Client();
    denying.middlewareStack.add(
      (next, context) => (args) => {
        if (context.commandName === 'DeleteObjectCommand')
          throw Object.assign(new Error('denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
        return next(args);
      },
      { step: 'initialize' },
    );
    const writer = new S3ObjectWriter(client, { bucket: BUCKET, key: 'deny/part-0000-batch-00000.csv' });
    const data = bytes(1);
    await pipeline(data.stream(), writer.open());
    await writer.commit({ bytes: data.size, sha256: data.sha256 });
    await assert.rejects(
      new S3Store(() => denying).removeStartingWith(`s3://${BUCKET}/deny/part-0000-batch-`),
      (err) => errorCodeOf(err) === 'S3_ACCESS_DENIED',
    );
  });

  it('wrong credentials, a missing bucket and an unreachable endpoint have stable codes', async () => {
    const wrong = await s3Client({ AWS_SECRET_ACCESS_KEY: 'not-the-secret' });
    await assert.rejects(checkBucket(wrong, { bucket: BUCKET, key: '' }), (err) => errorCodeOf(err) === 'S3_ACCESS_DENIED');
    await assert.rejects(checkBucket(client, { bucket: 'pgx-no-such-bucket', key: '' }), (err) => errorCodeOf(err) === 'S3_BUCKET_NOT_FOUND');
    const nowhere = await s3Client({ AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:1' });
    await assert.rejects(checkBucket(nowhere, { bucket: BUCKET, key: '' }), (err) => errorCodeOf(err) === 'S3_UNREACHABLE');
    const denied = await deleteObject(wrong, { bucket: BUCKET, key: 'del/y.csv' });
    assert.deepEqual(denied, { url: `s3://${BUCKET}/del/y.csv`, released: false, code: 'S3_ACCESS_DENIED' });
  });
});

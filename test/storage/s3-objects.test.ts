/**
 * The S3 room against a real S3 server (SeaweedFS): multipart objects that appear only when
 * complete, receipts of exactly the stored bytes, aborted uploads that leave nothing, checked
 * deletes, and coded errors for wrong credentials, a missing bucket and an unreachable endpoint.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, ListMultipartUploadsCommand, type S3Client } from '@aws-sdk/client-s3';
import { errorCodeOf } from '../../src/errors';
import { abortUploads, checkBucket, deleteObject, listObjects, objectExists } from '../../src/storage/s3-objects';
import { MIN_PART_SIZE, S3ObjectWriter } from '../../src/storage/s3-object-writer';
import { s3Client, s3Service } from '../support/s3';
import { eventually } from '../support/eventually';

const BUCKET = 'pgx-storage-test';

/** `blocks` blocks of 1 MiB of seeded bytes (cheap to make, not compressible by accident). */
function bytes(blocks: number): { stream: () => Readable; sha256: string; size: number } {
  const block = randomBytes(1 << 20);
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
    size: blocks << 20,
  };
}

async function readBack(client: S3Client, key: string): Promise<string> {
  const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  const hash = createHash('sha256');
  for await (const chunk of got.Body as Readable) hash.update(chunk as Buffer);
  return hash.digest('hex');
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
    const data = bytes((MIN_PART_SIZE / (1 << 20)) * 2 + 3);
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

  it('a server checksum that disagrees with ours fails the commit with S3_CHECKSUM_MISMATCH', async () => {
    const data = bytes(2);
    const writer = new S3ObjectWriter(client, { bucket: BUCKET, key: 'mismatch/x.csv' });
    await pipeline(data.stream(), writer.open());
    await assert.rejects(
      writer.commit({ bytes: data.size, sha256: createHash('sha256').update('other bytes').digest('hex') }),
      (err) => errorCodeOf(err) === 'S3_CHECKSUM_MISMATCH',
    );
  });

  it('a discarded writer leaves neither an object nor an upload; a killed one is aborted by abortUploads', async () => {
    const data = bytes(MIN_PART_SIZE / (1 << 20) + 8);
    const discarded = new S3ObjectWriter(client, { bucket: BUCKET, key: 'gone/a.csv' });
    const source = data.stream();
    let sent = 0;
    source.on('data', (c: Buffer) => {
      sent += c.length;
      if (sent > MIN_PART_SIZE + (4 << 20)) source.destroy(new Error('writer died'));
    });
    await assert.rejects(pipeline(source, discarded.open()));
    await discarded.discard();
    assert.equal(await objectExists(client, discarded.object), false);
    assert.equal(await pendingUploads(client, 'gone/'), 0);

    // A writer that is never committed nor discarded (its process was killed) leaves an upload behind.
    const orphan = new S3ObjectWriter(client, { bucket: BUCKET, key: 'gone/b.csv' });
    const feed = data.stream();
    feed.pipe(orphan.open());
    await eventually(async () => (await pendingUploads(client, 'gone/')) > 0, 'the upload started', { intervalMs: 100 });
    feed.destroy();
    orphan.open().destroy();
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

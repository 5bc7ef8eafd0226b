/**
 * Outputs in an S3-compatible bucket. A run's folder is a key prefix that holds its run id, so no
 * other run writes there; objects become visible only when complete (see S3ObjectWriter). A
 * release deletes the objects it was asked to and checks each gone, and aborts every incomplete
 * multipart upload under the run's folders, so a killed writer leaves nothing behind.
 */
import { GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { ErrorCode, PgExtractError } from '../errors';
import { FileReleaseAuthority } from './file-release';
import type { ReleaseReport } from '../lifecycle/terminal';
import type { OutputSink } from './output-sink';
import type { OutputStore, ReleaseRequest, SinkBatch, VisibleOutput } from './output-store';
import { s3ErrorCode, s3Failure, statusOf } from './s3-errors';
import { S3ObjectWriter } from './s3-object-writer';
import { abortUploads, checkBucket, deleteObject, listObjects } from './s3-objects';
import { type S3Location, type S3UrlProblem, parseS3Url } from '../contract/s3-url';

function located(url: string, field = 'outDir'): S3Location {
  try {
    return parseS3Url(url);
  } catch (err) {
    throw new PgExtractError((err as S3UrlProblem).code, `${url.slice(0, 200)}: ${(err as Error).message}`, { field });
  }
}

/** Requests a visibility check, or a removal by prefix, sends at once: the client's pool serves the worker's uploads too. */
const CHECKS_AT_ONCE = 32;

/**
 * Deletes every object whose key starts with `keyPrefix`, each checked gone, {@link CHECKS_AT_ONCE}
 * at a time (one after another, a discard of 2,000 batch files 15 ms away outlasted its activity's
 * minute); returns their URLs, or throws with the first failure's code.
 */
async function removeObjects(client: S3Client, location: S3Location, keyPrefix: string): Promise<string[]> {
  const keys = await listObjects(client, location, keyPrefix);
  const removed: string[] = [];
  for (let at = 0; at < keys.length; at += CHECKS_AT_ONCE) {
    const results = await Promise.all(keys.slice(at, at + CHECKS_AT_ONCE).map((key) => deleteObject(client, { bucket: location.bucket, key })));
    const failed = results.find((result) => !result.released);
    if (failed) throw new PgExtractError(failed.code ?? ErrorCode.RELEASE_FAILED, `could not remove ${failed.url} (${failed.code})`);
    removed.push(...results.map((result) => result.url));
  }
  return removed;
}

/** A coded failure the release report carries. */
class ReleaseFailure extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

export class S3Store implements OutputStore {
  /** @param client the worker's S3 client, made on first use (workers that never write to S3 need no AWS settings). */
  constructor(private readonly client: () => S3Client) {}

  async prepareFolder(folder: string): Promise<void> {
    await checkBucket(this.client(), located(folder));
  }

  async sink(name: string): Promise<OutputSink> {
    return new S3ObjectWriter(this.client(), located(name, 'name'));
  }

  /** An object is durable at CompleteMultipartUpload: nothing is left for the batch to sync. */
  batch(): SinkBatch {
    return { sink: (name) => this.sink(name), sync: async () => undefined };
  }

  async removeStartingWith(namePrefix: string): Promise<string[]> {
    const client = this.client();
    const prefix = located(namePrefix, 'name');
    await abortUploads(client, prefix, prefix.key);
    return removeObjects(client, prefix, prefix.key);
  }

  evidenceName(location: string): string {
    return location;
  }

  async release(request: ReleaseRequest): Promise<ReleaseReport> {
    const client = this.client();
    const remove = async (url: string): Promise<void> => {
      const result = await deleteObject(client, located(url, 'paths'));
      if (!result.released) throw new ReleaseFailure(result.code ?? 'RELEASE_FAILED');
    };
    const report = await new FileReleaseAuthority(remove).releaseAll(request.paths);
    // Incomplete uploads are never evidence: every folder of the run loses them, kept or not.
    for (const folder of [...request.sweepFolders, ...request.discardFolders]) {
      await abortUploads(client, located(folder)).catch((err: unknown) => report.failures.push({ path: folder, code: s3ErrorCode(err) }));
    }
    // A discarded folder (its run's and attempt's own prefix) keeps nothing, named or not: an object
    // no request named is one a writer completed after its attempt was given up.
    if (report.failures.length === 0) {
      for (const folder of request.discardFolders) {
        const location = located(folder);
        await removeObjects(client, location, `${location.key}/`).then(
          (urls) => report.deleted.push(...urls),
          (err: unknown) => report.failures.push({ path: folder, code: s3ErrorCode(err) }),
        );
      }
    }
    return report;
  }

  async read(location: string): Promise<Readable> {
    const { bucket, key } = located(location, 'files');
    const got = await this.client()
      .send(new GetObjectCommand({ Bucket: bucket, Key: key }))
      .catch((err: unknown) => Promise.reject(s3Failure(err, `reading ${location}`)));
    return got.Body as Readable;
  }

  async checkVisible(outputs: readonly VisibleOutput[]): Promise<void> {
    for (let at = 0; at < outputs.length; at += CHECKS_AT_ONCE) await this.checkEach(outputs.slice(at, at + CHECKS_AT_ONCE));
  }

  private async checkEach(outputs: readonly VisibleOutput[]): Promise<void> {
    await Promise.all(
      outputs.map(async ({ name, bytes }) => {
        const { bucket, key } = located(name, 'name');
        const size = await this.client()
          .send(new HeadObjectCommand({ Bucket: bucket, Key: key }))
          .then(
            (head) => head.ContentLength ?? null,
            (err: unknown) => (statusOf(err) === 404 ? null : Promise.reject(s3Failure(err, `checking ${name}`))),
          );
        if (size !== bytes)
          throw new PgExtractError(ErrorCode.OUTPUT_NOT_VISIBLE, `${name} is ${size === null ? 'missing' : `${size} bytes, not ${bytes}`}`, {
            field: 'outDir',
          });
      }),
    );
  }
}

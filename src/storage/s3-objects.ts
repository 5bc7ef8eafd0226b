/**
 * What a run does to its objects besides writing them: list what lies under its prefix, delete
 * objects and check that they are gone, and abort multipart uploads a killed writer left behind.
 */
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { ErrorCode, PgExtractError } from '../errors';
import { CleanupCode } from '../lifecycle/terminal';
import { isUnreachable, s3ErrorCode, s3Failure, statusOf } from './s3-errors';
import { type S3Location, formatS3Url } from '../contract/s3-url';

/** Proves the bucket exists and these credentials may use it, before anything is written. */
export async function checkBucket(client: S3Client, location: S3Location): Promise<void> {
  await client.send(new HeadBucketCommand({ Bucket: location.bucket })).catch((err: unknown) => {
    // HeadBucket answers without a body, so a missing bucket is a bare 404.
    if (statusOf(err) === 404)
      throw new PgExtractError(ErrorCode.S3_BUCKET_NOT_FOUND, `bucket ${location.bucket} does not exist`, { field: 'outDir', cause: err });
    // No credentials in the whole chain before anything is written: the worker's settings. (Later, one
    // provider's timeout can end the chain the same way, and a retry may then find them.)
    if ((err as { name?: string } | null)?.name === 'CredentialsProviderError')
      throw new PgExtractError(ErrorCode.S3_ACCESS_DENIED, `bucket ${location.bucket}: no AWS credentials found`, { field: 'outDir', cause: err });
    // No server answers before anything is written: the endpoint is wrong. (Later it may be restarting, and is retried.)
    throw s3Failure(err, `bucket ${location.bucket}`, isUnreachable(err) ? ErrorCode.S3_UNREACHABLE : s3ErrorCode(err));
  });
}

/** Whether `err` says the upload is not there (completed, or aborted already): nothing is left to abort. */
export function isNoSuchUpload(err: unknown): boolean {
  return statusOf(err) === 404;
}

/** Keys of the objects under `prefix` (a folder: `prefix/…`, unless `keyPrefix` says otherwise). */
export async function listObjects(client: S3Client, prefix: S3Location, keyPrefix = `${prefix.key}/`): Promise<string[]> {
  const keys: string[] = [];
  for (let token: string | undefined; ;) {
    const page = await client
      .send(new ListObjectsV2Command({ Bucket: prefix.bucket, Prefix: keyPrefix, ContinuationToken: token }))
      .catch((err: unknown) => Promise.reject(s3Failure(err, `listing ${formatS3Url(prefix)}`)));
    for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key);
    if (!page.IsTruncated) return keys;
    token = page.NextContinuationToken;
  }
}

/** Aborts every incomplete multipart upload under `prefix` (or whose key starts with `keyPrefix`); returns how many it aborted. */
export async function abortUploads(client: S3Client, prefix: S3Location, keyPrefix = `${prefix.key}/`): Promise<number> {
  let aborted = 0;
  for (let keyMarker: string | undefined, uploadIdMarker: string | undefined; ;) {
    const page = await client
      .send(new ListMultipartUploadsCommand({ Bucket: prefix.bucket, Prefix: keyPrefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }))
      .catch((err: unknown) => Promise.reject(s3Failure(err, `listing uploads under ${formatS3Url(prefix)}`)));
    for (const u of page.Uploads ?? []) {
      await client.send(new AbortMultipartUploadCommand({ Bucket: prefix.bucket, Key: u.Key, UploadId: u.UploadId })).catch((err: unknown) => {
        // Completed or aborted since it was listed: its object, if any, is the caller's to delete.
        if (!isNoSuchUpload(err)) return Promise.reject(s3Failure(err, `aborting the upload of ${formatS3Url({ bucket: prefix.bucket, key: u.Key ?? '' })}`));
      });
      aborted++;
    }
    if (!page.IsTruncated) return aborted;
    keyMarker = page.NextKeyMarker;
    uploadIdMarker = page.NextUploadIdMarker;
  }
}

/** Whether the object exists (HEAD 404 → false); other failures are thrown with their code. */
export async function objectExists(client: S3Client, location: S3Location): Promise<boolean> {
  try {
    await client.send(new HeadObjectCommand({ Bucket: location.bucket, Key: location.key }));
    return true;
  } catch (err) {
    if (statusOf(err) === 404) return false;
    throw s3Failure(err, `checking ${formatS3Url(location)}`);
  }
}

/** One object's release: deleted and checked gone, or the stable code of why not. */
export interface ObjectRelease {
  url: string;
  released: boolean;
  code: ErrorCode | null;
}

/** Deletes the object, then checks it is gone: a delete the server accepted but did not apply is not a release. */
export async function deleteObject(client: S3Client, location: S3Location): Promise<ObjectRelease> {
  const url = formatS3Url(location);
  try {
    await client.send(new DeleteObjectCommand({ Bucket: location.bucket, Key: location.key }));
    const gone = !(await objectExists(client, location));
    return { url, released: gone, code: gone ? null : CleanupCode.S3_OBJECT_STILL_PRESENT };
  } catch (err) {
    return { url, released: false, code: s3ErrorCode(err) };
  }
}

/** One SeaweedFS S3 server per test run, started on first use and stopped by the root hooks. */
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { type S3Service, startS3 } from '../../devenv/s3-service';
import { s3ClientFromEnv } from '../../src/storage/s3-client';
import { parseS3Url } from '../../src/contract/s3-url';

let started: Promise<S3Service> | undefined;

export function s3Service(): Promise<S3Service> {
  started ??= startS3();
  return started;
}

/** A client with the test server's credentials; `env` overrides (e.g. a wrong secret). */
export async function s3Client(env: Record<string, string> = {}): Promise<S3Client> {
  return s3ClientFromEnv({ ...(await s3Service()).env, ...env });
}

/** Downloads `urls` (s3://…) into `dir`, for checks that read files; returns the local paths in order. */
export async function download(urls: string[], dir: string): Promise<string[]> {
  const client = await s3Client();
  return Promise.all(
    urls.map(async (url, i) => {
      const { bucket, key } = parseS3Url(url);
      const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const path = join(dir, `${i}-${key.split('/').pop()}`);
      await pipeline(got.Body as Readable, createWriteStream(path));
      return path;
    }),
  );
}

/** Keys under `prefix` in `bucket`, and incomplete multipart uploads there. */
export async function bucketContents(bucket: string, prefix: string): Promise<{ objects: string[]; uploads: string[] }> {
  const client = await s3Client();
  const objects = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }));
  return { objects: (objects.Contents ?? []).map((o) => o.Key!), uploads: (uploads.Uploads ?? []).map((u) => u.Key!) };
}

export async function stopS3(): Promise<void> {
  const service = started;
  started = undefined;
  if (service) await (await service).stop();
}

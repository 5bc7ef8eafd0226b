/** One SeaweedFS S3 server per test run, started on first use and stopped by the root hooks. */
import { type S3Client } from '@aws-sdk/client-s3';
import { type S3Service, startS3 } from '../../src/devenv/s3-service';
import { s3ClientFromEnv } from '../../src/storage/s3-client';

let started: Promise<S3Service> | undefined;

export function s3Service(): Promise<S3Service> {
  started ??= startS3();
  return started;
}

/** A client with the test server's credentials; `env` overrides (e.g. a wrong secret). */
export async function s3Client(env: Record<string, string> = {}): Promise<S3Client> {
  return s3ClientFromEnv({ ...(await s3Service()).env, ...env });
}

export async function stopS3(): Promise<void> {
  const service = started;
  started = undefined;
  if (service) await (await service).stop();
}

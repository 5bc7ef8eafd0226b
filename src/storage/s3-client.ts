/**
 * The worker's S3 client, configured only from the standard AWS SDK environment of the worker
 * process (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL_S3 or
 * AWS_ENDPOINT_URL, or any other source the SDK's default chain reads). Nothing of it travels in
 * workflow history: inputs carry `s3://bucket/prefix` only.
 */
import { S3Client } from '@aws-sdk/client-s3';

/**
 * How long a request's connected socket may stay silent (no byte sent or received) before the
 * request fails: a part's upload is never silent that long. There is no limit of ours on connecting:
 * the SDK's would also count the wait for a free socket of its pool, which many requests at once can
 * exceed; the system's connect timeout applies.
 */
const S3_IDLE_TIMEOUT_MS = 60_000;

/** A request's time limits. */
export interface S3Timeouts {
  /** @default S3_IDLE_TIMEOUT_MS */
  idleMs?: number;
}

/**
 * A client for the environment `env`. With a custom endpoint (SeaweedFS, MinIO, Ceph…) addressing
 * is path-style, which those servers need; on AWS itself the SDK's virtual-hosted style stays.
 * `AWS_S3_FORCE_PATH_STYLE=true|false` (or 1|0, in any case) overrides either way.
 */
export function s3ClientFromEnv(env: NodeJS.ProcessEnv = process.env, timeouts: S3Timeouts = {}): S3Client {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const forced = env.AWS_S3_FORCE_PATH_STYLE;
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN: sessionToken } = env;
  return new S3Client({
    // Keys in `env` are used as given; without them the SDK's default chain (profiles, IMDS, …) applies.
    ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } } : {}),
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    ...(endpoint ? { endpoint } : {}),
    forcePathStyle: forced ? ['true', '1'].includes(forced.toLowerCase()) : endpoint !== undefined,
    // Our own retries (Temporal's) decide about failed activities; the SDK retries a request a few times.
    maxAttempts: 3,
    // A bucket in another region than AWS_REGION: the SDK follows S3's redirect instead of failing every request.
    followRegionRedirects: true,
    // No answer is a failure to retry, not a wait: without it a request on a dead connection waits for ever,
    // and so do the activity (its heartbeats go on) and the discard that waits for its requests.
    requestHandler: { socketTimeout: timeouts.idleMs ?? S3_IDLE_TIMEOUT_MS },
    // Uploads carry the SHA-256 we compute anyway; the SDK need not checksum them (or anything) again.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** One SeaweedFS S3 server per test run, started on first use and stopped by the root hooks. */
import { createWriteStream } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** A proxy in front of the S3 server that holds some requests, as a stalled network would. */
export interface GatedS3Proxy {
  /** The endpoint to give a worker (AWS_ENDPOINT_URL_S3). */
  url: string;
  /** Resolves when the first held request arrives. */
  held: Promise<void>;
  /** Lets the held requests through; resolves once the server has answered them all. */
  release(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a {@link GatedS3Proxy} that holds `method` requests whose path matches `path`. Signatures still verify: headers, Host included, pass unchanged. */
export async function gatedS3Proxy(method: string, path: RegExp): Promise<GatedS3Proxy> {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let arrived!: () => void;
  const held = new Promise<void>((resolve) => (arrived = resolve));
  const answered: Promise<void>[] = [];
  const proxy = await s3Proxy((req, forward) => {
    const hold = req.method === method && path.test(req.url ?? '');
    if (!hold) return void forward();
    arrived();
    answered.push(gate.then(forward));
  });
  return {
    url: proxy.url,
    held,
    release: async () => {
      open();
      await Promise.all(answered);
    },
    close: () => (open(), proxy.close()),
  };
}

/**
 * A proxy in front of the S3 server that answers the requests `refuse` picks with 403 Forbidden,
 * as a bucket policy denying them would, and passes the rest through.
 */
export async function refusingS3Proxy(refuse: (req: IncomingMessage) => boolean): Promise<{ url: string; refused: () => number; close(): Promise<void> }> {
  let refused = 0;
  const proxy = await s3Proxy((req, forward, res) => {
    if (!refuse(req)) return void forward();
    refused++;
    req.resume();
    res.writeHead(403, { 'content-length': '0' }).end();
  });
  return { url: proxy.url, refused: () => refused, close: proxy.close };
}

/** A proxy to the S3 server; `route` forwards each request (resolving once it is answered) or answers it itself. */
async function s3Proxy(
  route: (req: IncomingMessage, forward: () => Promise<void>, res: ServerResponse) => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL((await s3Service()).env.AWS_ENDPOINT_URL_S3!);
  const server = createServer((req, res) => {
    const forward = () =>
      new Promise<void>((resolve) => {
        // Answered, or the client gave up waiting: either way nothing more comes of it.
        res.on('close', resolve);
        const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        out.on('error', () => res.destroy());
        req.pipe(out);
      });
    route(req, forward, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

export async function stopS3(): Promise<void> {
  const service = started;
  started = undefined;
  if (service) await (await service).stop();
}

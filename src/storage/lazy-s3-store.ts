/**
 * The S3 store, loaded on its first use. The AWS SDK is about 20 MB of a process's memory (and, on
 * Node 20, a deprecation warning at load); a worker or CLI command that writes and reads only local
 * files never needs it. Every method but {@link LazyS3Store.evidenceName} is asynchronous already,
 * so each one awaits the real {@link S3Store} and hands the call on.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type { ReleaseReport } from '../lifecycle/terminal';
import type { OutputSink } from './output-sink';
import type { OutputStore, ReleaseRequest, SinkBatch, VisibleOutput } from './output-store';
import type { S3Store } from './s3-store';

export class LazyS3Store implements OutputStore {
  private loaded: Promise<S3Store> | null = null;

  /** @param client the S3 client, made on first use; by default one from the process's AWS_* environment (s3-client.ts). */
  constructor(private readonly client?: () => S3Client) {}

  /** The real store; the SDK's modules are required on the first call, and again after a load that failed (EMFILE, say). */
  private store(): Promise<S3Store> {
    this.loaded ??= Promise.all([import('./s3-store'), import('./s3-client')]).then(
      ([{ S3Store }, { s3ClientFromEnv }]) => {
        let client: S3Client | undefined;
        return new S3Store(this.client ?? (() => (client ??= s3ClientFromEnv())));
      },
      (err: unknown) => {
        this.loaded = null;
        throw err;
      },
    );
    return this.loaded;
  }

  async prepareFolder(folder: string): Promise<void> {
    return (await this.store()).prepareFolder(folder);
  }

  async sink(name: string): Promise<OutputSink> {
    return (await this.store()).sink(name);
  }

  /** An object is durable at CompleteMultipartUpload: nothing is left for the batch to sync. */
  batch(): SinkBatch {
    return { sink: (name) => this.sink(name), sync: async () => undefined };
  }

  async removeStartingWith(namePrefix: string): Promise<string[]> {
    return (await this.store()).removeStartingWith(namePrefix);
  }

  /** An object's evidence name is its URL, as {@link S3Store.evidenceName} gives it. */
  evidenceName(location: string): string {
    return location;
  }

  async release(request: ReleaseRequest): Promise<ReleaseReport> {
    return (await this.store()).release(request);
  }

  async read(location: string): Promise<Readable> {
    return (await this.store()).read(location);
  }

  async checkVisible(outputs: readonly VisibleOutput[]): Promise<void> {
    return (await this.store()).checkVisible(outputs);
  }
}

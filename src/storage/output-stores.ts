/**
 * The worker's two output backends, and the choice between them by name: an `s3://` URL is an
 * object in a bucket, anything else a path under the local output root.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { releaseErrorCode } from './file-release';
import type { ReleaseReport } from '../lifecycle/terminal';
import { LocalStore } from './local-store';
import type { OutputStore, ReleaseRequest, SinkBatch, VisibleOutput } from './output-store';
import { LazyS3Store } from './lazy-s3-store';
import { isS3Url } from '../contract/s3-url';

/** Options for {@link OutputStores}. */
export interface OutputStoresOptions {
  /** The local output root (PG_EXTRACT_OUT_DIR). */
  outputRoot: string;
  /** Mode of local output files. */
  fileMode: number;
  /** Whether local files are written with O_DIRECT where the file system allows it. @default true */
  directIo?: boolean;
  /** The S3 client. @default one from the worker's AWS_* environment, made on first use */
  s3Client?: () => S3Client;
}

export class OutputStores {
  readonly local: LocalStore;
  /** Loaded on first use (see lazy-s3-store.ts): a worker that never writes to S3 needs neither the SDK nor AWS settings. */
  readonly s3: LazyS3Store;

  constructor(options: OutputStoresOptions) {
    this.local = new LocalStore(options.outputRoot, options.fileMode, options.directIo ?? true);
    this.s3 = new LazyS3Store(options.s3Client);
  }

  /** The store that holds `name` (a location, a folder or an output name). */
  of(name: string): OutputStore {
    return isS3Url(name) ? this.s3 : this.local;
  }

  /** A batch over both stores: each name's sink comes from its own store's batch (see {@link OutputStore.batch}). */
  batch(): SinkBatch {
    const batches = new Map<OutputStore, SinkBatch>();
    const batchOf = (name: string): SinkBatch => {
      const store = this.of(name);
      let batch = batches.get(store);
      if (!batch) {
        batch = store.batch();
        batches.set(store, batch);
      }
      return batch;
    };
    return {
      sink: (name, options) => batchOf(name).sink(name, options),
      sync: async () => {
        for (const batch of batches.values()) await batch.sync();
      },
    };
  }

  /** Throws OUTPUT_NOT_VISIBLE unless every output is visible through its own store (see {@link OutputStore.checkVisible}). */
  async checkVisible(outputs: readonly VisibleOutput[]): Promise<void> {
    await Promise.all(
      [this.local, this.s3].map((store) => {
        const mine = outputs.filter((o) => this.of(o.name) === store);
        return mine.length > 0 ? store.checkVisible(mine) : undefined;
      }),
    );
  }

  /** Releases what `request` names, each item through its own store. */
  async release(request: ReleaseRequest, owner: string): Promise<ReleaseReport> {
    const split = (store: OutputStore): ReleaseRequest => ({
      paths: request.paths.filter((p) => this.of(p) === store),
      sweepFolders: request.sweepFolders.filter((f) => this.of(f) === store),
      discardFolders: request.discardFolders.filter((f) => this.of(f) === store),
    });
    const reports = [];
    const deleted: string[] = [];
    const failures: ReleaseReport['failures'] = [];
    for (const prefix of request.prefixes ?? []) {
      await this.of(prefix)
        .removeStartingWith(prefix)
        .then(
          (removed) => deleted.push(...removed),
          (err: unknown) => failures.push({ path: prefix, code: releaseErrorCode(err) }),
        );
    }
    for (const store of [this.local, this.s3]) {
      const part = split(store);
      if (part.paths.length + part.sweepFolders.length + part.discardFolders.length > 0) reports.push(await store.release(part, owner));
    }
    return { deleted: [...deleted, ...reports.flatMap((r) => r.deleted)], failures: [...failures, ...reports.flatMap((r) => r.failures)] };
  }
}

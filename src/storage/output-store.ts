/**
 * Where a run's outputs live: one small interface, two backends — a local folder under the
 * worker's output root ({@link LocalStore}) and an S3-compatible bucket ({@link S3Store}). The
 * activities pick the backend by the name the workflow gives them (`s3://…` or a relative path)
 * and never branch on it otherwise.
 */
import type { Readable } from 'node:stream';
import type { ReleaseReport } from '../lifecycle/terminal';
import type { OutputSink } from './output-sink';

/** What to release: files (or objects) by location, and attempt folders to discard or sweep. */
export interface ReleaseRequest {
  paths: string[];
  /** Folders whose leftovers (temp files, incomplete uploads) go, while their outputs stay. */
  sweepFolders: string[];
  /** Folders of a finished or failed attempt: removed once their outputs are released. */
  discardFolders: string[];
  /** Name prefixes whose every output goes before the folders are discarded (see {@link OutputStore.removeStartingWith}). */
  prefixes?: string[];
}

/** An output as a manifest lists it: its name and receipted size. */
export interface VisibleOutput {
  name: string;
  bytes: number;
}

/** How an output will be used, for a store that can write it to suit. */
export interface SinkOptions {
  /**
   * This worker reads the output back as soon as the run's copy ends (the built-in loader): a local
   * file is then written through the page cache, where the loader finds it, not past it.
   */
  readBack?: boolean;
}

/** Sinks of outputs written one after another and reported together: see {@link OutputStore.batch}. */
export interface SinkBatch {
  /** A sink for the output `name` inside a prepared folder. */
  sink(name: string, options?: SinkOptions): Promise<OutputSink>;
  /** Makes the names of the outputs committed so far durable: call before reporting them. */
  sync(): Promise<void>;
}

export interface OutputStore {
  /**
   * Makes `folder` ready for the run `owner` and proves the store usable (the bucket exists and the
   * credentials work), before any partition starts. Refuses a folder another run owns.
   */
  prepareFolder(folder: string, owner: string): Promise<void>;
  /** A sink for the output `name` inside a prepared folder. */
  sink(name: string, options?: SinkOptions): Promise<OutputSink>;
  /**
   * Sinks for many outputs written one after another and reported together (a group of small
   * tables): each folder is checked once, not at every output, and the folders' new entries are
   * made durable once, by {@link SinkBatch.sync}, not at every commit.
   */
  batch(): SinkBatch;
  /**
   * Removes every output, temp file and incomplete upload whose name starts with `namePrefix`
   * (a file name prefix inside a prepared folder): what an earlier try of a batched writer left.
   * Returns the outputs it deleted (paths locally, URLs on S3); a failure has a stable code.
   */
  removeStartingWith(namePrefix: string): Promise<string[]>;
  /** The name an output's receipt evidence uses: relative to the root locally, the URL on S3. */
  evidenceName(location: string): string;
  /** Releases outputs and folders of the run `owner`; every failure is a stable code in the report. */
  release(request: ReleaseRequest, owner: string): Promise<ReleaseReport>;
  /** The bytes of a committed output, for the built-in loader. */
  read(location: string): Promise<Readable>;
  /**
   * Throws OUTPUT_NOT_VISIBLE unless every output is visible here with its `bytes`: a manifest lists
   * only what one reader can open.
   */
  checkVisible(outputs: readonly VisibleOutput[]): Promise<void>;
}

/**
 * Batched COPY: a lazy sequence of size-bounded files from one REPEATABLE READ READ ONLY
 * transaction. Nothing is acquired when the object is built; the transaction and snapshot start
 * on the first batch. Batches are keyset ranges (or ctid page ranges without a key; see
 * {@link copyBatchFiles}). The receipt completes only after the terminal empty batch proves
 * exhaustion; the transaction stays open until {@link endRead}, and the files are the caller's
 * to keep or release.
 */
import type { Client } from 'pg';
import type { FileReceipt } from '../contract/file-receipt';
import { ClockAuthority, ExtractionLifecycleAuthority } from '../lifecycle';
import type { FileBounds } from '../contract/file-bounds';
import type { OutputSink } from '../storage/output-sink';
import { type BatchFile, copyBatchFiles } from './batch-files';
import type { ResolvedTable } from './catalog';
import type { ExportFormat } from '../contract/formats';
import { beginRepeatableRead, serverNow } from './server-clock';
import { readAsSnapshotSaw } from './snapshot-changes';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../contract/extraction-input';

export type { BatchFile };

/** Options for {@link BatchedCopy}. */
export interface BatchedCopyOptions {
  format: ExportFormat;
  bounds: FileBounds;
  /** The sink of the index-th file. */
  sink: (index: number) => Promise<OutputSink>;
  /** A file's name in the receipt's evidence. @default its location */
  evidenceName?: (location: string) => string;
  onBytes?: (bytes: number) => void;
  signal?: AbortSignal;
  /** How long a lock on the table may be waited for (then LOCK_TIMEOUT). @default {@link DEFAULT_LOCK_TIMEOUT_MS} */
  lockTimeoutMs?: number;
}

export class BatchedCopy implements AsyncIterable<BatchFile> {
  readonly authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.postgresqlServer });
  /** Locations of the files written so far, in order. */
  readonly files: string[] = [];
  /** The reading session and the digest of its snapshot, once the first batch began. */
  backendPid: number | null = null;
  snapshotDigest: string | null = null;
  readonly #client: Client;
  readonly #table: ResolvedTable;
  readonly #options: BatchedCopyOptions;
  #inTransaction = false;
  #started = false;

  /** Holds `client` (a fresh session) until {@link endRead}. */
  constructor(client: Client, table: ResolvedTable, options: BatchedCopyOptions) {
    this.#client = client;
    this.#table = table;
    this.#options = options;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<BatchFile> {
    if (this.#started) throw new Error('a batched copy is read once');
    this.#started = true;
    const c = this.#client;
    this.#inTransaction = true;
    ({ backendPid: this.backendPid, snapshotDigest: this.snapshotDigest } = await beginRepeatableRead(
      c,
      this.authority,
      [this.#table],
      this.#options.lockTimeoutMs,
    ));
    const evidence: FileReceipt[] = [];
    const name = this.#options.evidenceName ?? ((location: string) => location);
    for await (const file of copyBatchFiles(c, this.#table, { kind: 'all' }, this.#options)) {
      this.files.push(file.location);
      evidence.push({ name: name(file.location), rows: file.rows, bytes: file.bytes, sha256: file.sha256 });
      yield file;
    }
    // Reached only after the terminal batch read nothing: the table is exhausted at the snapshot.
    await readAsSnapshotSaw(c, this.#table);
    this.authority.complete(evidence, await serverNow(c));
  }

  /** Ends the read transaction of a complete copy, leaving the files to the caller's own terminal decision. */
  async endRead(): Promise<void> {
    if (!this.#inTransaction) return;
    this.#inTransaction = false;
    await this.#client.query('COMMIT');
  }
}

/**
 * Batched COPY: a lazy sequence of files from one REPEATABLE READ READ ONLY transaction. Nothing
 * is acquired when the object is built; the transaction and snapshot start on the first batch.
 * Batches are keyset ranges (one index probe per batch, linear overall — never LIMIT/OFFSET) or,
 * without a key, ctid page ranges. The receipt completes only after a terminal empty batch proves
 * exhaustion; the transaction stays open until the terminal outcome.
 */
import { join } from 'node:path';
import type { Client } from 'pg';
import {
  ClockAuthority,
  ExtractionLifecycleAuthority,
  type FileEvidence,
  TerminalAuthority,
  type TerminalOutcome,
} from '../lifecycle';
import { FileReleaseAuthority } from '../storage/file-release';
import { type ResolvedTable, selectSql } from './catalog';
import { DEFAULT_FILE_MODE } from '../storage/output-root';
import { LocalFileSink } from '../storage/local-file-sink';
import { copyToOutput } from './copy-to-output';
import { type ExportFormat, fileExtension } from '../contract/formats';
import { copyOutSql } from './export-format';
import { keyBound } from './range-predicate';
import { beginRepeatableRead, serverNow } from './server-clock';
import { quoteIdent, quoteLiteral, quoteQualified } from './sql';

export interface BatchFile {
  index: number;
  path: string;
  rows: number;
  bytes: number;
  sha256: string;
}

/** Options for {@link BatchedCopy}. */
export interface BatchedCopyOptions {
  folder: string;
  format: ExportFormat;
  /** Rows per batch with a key; pages per batch (×100) without one. @default 100_000 */
  batchRows?: number;
}

export class BatchedCopy implements AsyncIterable<BatchFile> {
  readonly authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.postgresqlServer });
  readonly terminal: TerminalAuthority;
  readonly files: string[] = [];
  readonly #client: Client;
  readonly #table: ResolvedTable;
  readonly #options: BatchedCopyOptions;
  #inTransaction = false;
  #started = false;

  /** Holds `client` (a fresh session) until the terminal decision. */
  constructor(client: Client, table: ResolvedTable, options: BatchedCopyOptions) {
    this.#client = client;
    this.#table = table;
    this.#options = options;
    const release = new FileReleaseAuthority();
    const files = this.files;
    this.terminal = new TerminalAuthority({
      get files() {
        return files;
      },
      releaseFiles: (paths) => release.releaseAll(paths),
      closeSource: (outcome) => this.#close(outcome),
    });
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<BatchFile> {
    if (this.#started) throw new Error('a batched copy is read once');
    this.#started = true;
    const c = this.#client;
    this.#inTransaction = true;
    await beginRepeatableRead(c, this.authority);
    const evidence: FileEvidence[] = [];
    const batches = this.#table.key ? this.#keysetBatches() : await this.#pageBatches();
    let index = 0;
    for await (const { where, last } of batches) {
      const path = join(this.#options.folder, `batch-${String(index).padStart(6, '0')}${fileExtension(this.#options.format)}`);
      const written = await copyToOutput(c, copyOutSql(selectSql(this.#table, where), this.#options.format), new LocalFileSink(path, DEFAULT_FILE_MODE), { gzip: this.#options.format.gzip });
      const completedAt = await serverNow(c);
      this.files.push(path);
      const batch = { index: index++, path, rows: written.rowCount(), bytes: written.bytes, sha256: written.sha256 };
      evidence.push({ name: path, rows: batch.rows, bytes: batch.bytes, sha256: batch.sha256 });
      // The terminal batch reads past everything already read; finding it empty proves exhaustion.
      if (last && batch.rows === 0) this.authority.complete(evidence, completedAt);
      yield batch;
    }
  }

  /**
   * NULL keys first, then keyset ranges (last, the n-th next key]: each bounded by one index scan.
   * The n-th key is the last of the next n in key order (not max(), which uuid lacks), compared
   * under the key's collation as the index orders it.
   */
  async *#keysetBatches(): AsyncGenerator<{ where: string; last: boolean }> {
    const splitKey = this.#table.key!;
    const key = quoteIdent(splitKey.name);
    const relation = quoteQualified(this.#table.schema, this.#table.table);
    const size = Math.max(1, Math.floor(this.#options.batchRows ?? 100_000));
    yield { where: `${key} IS NULL`, last: false };
    for (let last: string | null = null; ; ) {
      const lower: string = last === null ? `${key} IS NOT NULL` : keyBound(splitKey, '>', last);
      const probe = await this.#client.query<{ upper: string }>(
        `SELECT ${key}::text AS upper FROM (SELECT ${key} FROM ${relation} WHERE ${lower} ORDER BY ${key} LIMIT ${size}) s ORDER BY s.${key} DESC LIMIT 1`,
      );
      const upper = probe.rows[0]?.upper;
      if (upper === undefined) {
        yield { where: lower, last: true };
        return;
      }
      yield { where: `${lower} AND ${keyBound(splitKey, '<=', upper)}`, last: false };
      last = upper;
    }
  }

  /** ctid page ranges up to the relation's size at the snapshot; later pages hold only invisible rows. */
  async #pageBatches(): Promise<AsyncGenerator<{ where: string; last: boolean }>> {
    const relation = quoteQualified(this.#table.schema, this.#table.table);
    const r = await this.#client.query<{ pages: string }>(
      `SELECT (pg_relation_size(${quoteLiteral(relation)}::regclass) / current_setting('block_size')::int)::text AS pages`,
    );
    const pages = Number(r.rows[0]!.pages);
    const step = Math.max(1, Math.ceil((this.#options.batchRows ?? 100_000) / 100));
    return (async function* () {
      for (let from = 0; from < pages; from += step) yield { where: `ctid >= '(${from},0)'::tid AND ctid < '(${from + step},0)'::tid`, last: false };
      yield { where: `ctid >= '(${pages},0)'::tid`, last: true };
    })();
  }

  async #close(outcome: TerminalOutcome): Promise<void> {
    if (!this.#inTransaction) return;
    this.#inTransaction = false;
    await this.#client.query(outcome === 'success' ? 'COMMIT' : 'ROLLBACK');
  }
}

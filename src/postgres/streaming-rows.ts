/**
 * Streaming rows: a server-side cursor inside a REPEATABLE READ READ ONLY transaction. Nothing
 * happens until the first read; the receipt completes only when the cursor is exhausted; the
 * transaction stays open until the target owner's terminal outcome (success → COMMIT, abort or
 * retain → ROLLBACK), and the cursor is always closed.
 */
import { createHash } from 'node:crypto';
import type { ClientBase } from 'pg';
import { ClockAuthority, ExtractionLifecycleAuthority, TerminalAuthority, type TerminalOutcome } from '../lifecycle';
import { type ResolvedTable, selectSql } from './catalog';
import { beginRepeatableRead, serverNow } from './server-clock';

const CURSOR = 'pg_extract_rows';

/** Options for {@link RowStream}. */
export interface RowStreamOptions {
  /** Rows per FETCH. @default 10_000 */
  fetchRows?: number;
  /** Evidence name in the receipt. @default the table name */
  name?: string;
}

export class RowStream implements AsyncIterable<unknown[][]> {
  readonly authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.postgresqlServer });
  readonly terminal: TerminalAuthority;
  readonly #client: ClientBase;
  readonly #select: string;
  readonly #fetchRows: number;
  readonly #name: string;
  #state: 'idle' | 'open' | 'exhausted' | 'closed' = 'idle';
  #cursorOpen = false;

  /** Holds `client` (a fresh session) until the terminal decision; nothing runs before the first read. */
  constructor(client: ClientBase, table: ResolvedTable, options: RowStreamOptions = {}) {
    this.#client = client;
    this.#select = selectSql(table);
    this.#fetchRows = options.fetchRows ?? 10_000;
    this.#name = options.name ?? `${table.schema}.${table.table}`;
    this.terminal = new TerminalAuthority({
      files: [],
      releaseFiles: async () => ({ deleted: [], failures: [] }),
      closeSource: (outcome) => this.#close(outcome),
    });
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<unknown[][]> {
    if (this.#state !== 'idle') throw new Error(`a row stream is read once (it is ${this.#state})`);
    this.#state = 'open';
    const c = this.#client;
    await beginRepeatableRead(c, this.authority);
    await c.query(`DECLARE ${CURSOR} NO SCROLL CURSOR FOR ${this.#select}`);
    this.#cursorOpen = true;
    const hash = createHash('sha256');
    let rows = 0;
    let bytes = 0;
    for (;;) {
      const batch = await c.query({ text: `FETCH ${this.#fetchRows} FROM ${CURSOR}`, rowMode: 'array' });
      if (batch.rows.length === 0) break;
      for (const r of batch.rows) {
        const line = `${JSON.stringify(r)}\n`;
        hash.update(line);
        bytes += Buffer.byteLength(line);
      }
      rows += batch.rows.length;
      yield batch.rows as unknown[][];
    }
    await c.query(`CLOSE ${CURSOR}`);
    this.#cursorOpen = false;
    this.authority.complete([{ name: this.#name, rows, bytes, sha256: hash.digest('hex') }], await serverNow(c));
    this.#state = 'exhausted';
  }

  /** Success commits, anything else rolls back; the cursor is closed either way. */
  async #close(outcome: TerminalOutcome): Promise<void> {
    if (this.#state === 'idle' || this.#state === 'closed') {
      this.#state = 'closed';
      return;
    }
    this.#state = 'closed';
    if (this.#cursorOpen) await this.#client.query(`CLOSE ${CURSOR}`).catch(() => undefined);
    this.#cursorOpen = false;
    await this.#client.query(outcome === 'success' ? 'COMMIT' : 'ROLLBACK');
  }
}

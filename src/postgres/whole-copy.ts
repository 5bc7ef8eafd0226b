/**
 * Whole COPY: one REPEATABLE READ READ ONLY transaction reads the whole table into one file.
 * The snapshot is the transaction's own (pg_current_snapshot(), taken by the first query);
 * the window is the server clock from that query to after the COPY, so it brackets the read.
 */
import type { Client } from 'pg';
import { ClockAuthority, ExtractResult, ExtractionLifecycleAuthority } from '../lifecycle';
import { type ResolvedTable, selectSql, sourceColumns } from './catalog';
import { rollbackAfter } from './session';
import { type CopiedOutput, type OutputSink, discardAfter } from '../storage/output-sink';
import type { ExportFormat } from '../contract/formats';
import { exportToOutput } from './export-to-output';
import { beginRepeatableRead, serverNow } from './server-clock';
import { readAsSnapshotSaw } from './snapshot-changes';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../contract/extraction-input';

export interface WholeCopyFile extends CopiedOutput {
  backendPid: number;
  /** Digest of the pg_current_snapshot() text the COPY read (also the receipt's sourceToken). */
  snapshotDigest: string;
}

/** Options for {@link wholeCopy}. */
export interface WholeCopyOptions {
  format: ExportFormat;
  /** Evidence name of the file in the receipt (relative, never an absolute host path). */
  name: string;
  onBytes?: (bytes: number) => void;
  /** Awaited once the snapshot exists and before any row is read (progress, audit, tests). */
  onSnapshot?: () => Promise<void> | void;
  signal?: AbortSignal;
  /** How long a lock on the table may be waited for (then LOCK_TIMEOUT). @default {@link DEFAULT_LOCK_TIMEOUT_MS} */
  lockTimeoutMs?: number;
}

/** Runs on a fresh session the caller closes. On failure: rolled back, no output left. */
export async function wholeCopy(client: Client, table: ResolvedTable, output: OutputSink, options: WholeCopyOptions): Promise<ExtractResult<WholeCopyFile>> {
  const authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.postgresqlServer });
  let committed = false;
  try {
    const { backendPid, snapshotDigest } = await beginRepeatableRead(client, authority, [table], options.lockTimeoutMs);
    await options.onSnapshot?.();
    const written = await exportToOutput(client, selectSql(table), sourceColumns(table), options.format, output, options);
    committed = true;
    await readAsSnapshotSaw(client, table);
    const completedAt = await serverNow(client);
    const file: WholeCopyFile = {
      location: written.location,
      etag: written.etag,
      rows: written.rows,
      bytes: written.bytes,
      sha256: written.sha256,
      backendPid,
      snapshotDigest,
    };
    authority.complete([{ name: options.name, rows: file.rows, bytes: file.bytes, sha256: file.sha256 }], completedAt);
    await client.query('COMMIT');
    return new ExtractResult(file, authority);
  } catch (err) {
    await rollbackAfter(client, err, 'whole-copy');
    if (committed) await discardAfter(err, output, 'output');
    throw err;
  }
}

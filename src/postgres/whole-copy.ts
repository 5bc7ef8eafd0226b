/**
 * Whole COPY: one REPEATABLE READ READ ONLY transaction reads the whole table into one file.
 * The snapshot is the transaction's own (pg_current_snapshot(), taken by the first query);
 * the window is the server clock from that query to after the COPY, so it brackets the read.
 */
import { rm } from 'node:fs/promises';
import type { Client } from 'pg';
import { addNote } from '../errors';
import { ClockAuthority, ExtractResult, ExtractionLifecycleAuthority, SnapshotAuthority, digestSourceToken } from '../lifecycle';
import { type ResolvedTable, selectSql } from './catalog';
import { copyToFile } from './copy-to-file';
import { type ExportFormat, copyOutSql } from './export-format';
import { utcText } from './session';

export interface WholeCopyFile {
  path: string;
  rows: number;
  bytes: number;
  sha256: string;
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
}

/** Runs on a fresh session the caller closes. On failure: rolled back, no file left. */
export async function wholeCopy(client: Client, table: ResolvedTable, path: string, options: WholeCopyOptions): Promise<ExtractResult<WholeCopyFile>> {
  const authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.postgresqlServer });
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  let renamed = false;
  try {
    const first = await client.query<{ snapshot: string; started: string; snapshot_at: string; pid: number }>(
      `SELECT pg_current_snapshot()::text AS snapshot, ${utcText('statement_timestamp()')} AS started,
              ${utcText('clock_timestamp()')} AS snapshot_at, pg_backend_pid() AS pid`,
    );
    const row = first.rows[0]!;
    authority.acquire(row.started);
    const snapshotDigest = digestSourceToken(row.snapshot);
    authority.acquireSnapshot(SnapshotAuthority.repeatableRead, snapshotDigest, row.snapshot_at);
    await options.onSnapshot?.();
    const written = await copyToFile(client, copyOutSql(selectSql(table), options.format), path, {
      gzip: options.format.gzip,
      onBytes: options.onBytes,
      signal: options.signal,
    });
    renamed = true;
    const done = await client.query<{ at: string }>(`SELECT ${utcText('clock_timestamp()')} AS at`);
    const file: WholeCopyFile = { path, rows: written.rowCount(), bytes: written.bytes, sha256: written.sha256, backendPid: row.pid, snapshotDigest };
    authority.complete([{ name: options.name, rows: file.rows, bytes: file.bytes, sha256: file.sha256 }], done.rows[0]!.at);
    await client.query('COMMIT');
    return new ExtractResult(file, authority);
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: unknown) => addNote(err, `rollback failed: ${(rollbackErr as { code?: string }).code ?? 'Error'}`));
    if (renamed) await rm(path, { force: true });
    throw err;
  }
}

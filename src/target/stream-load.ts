/**
 * Streaming PG → PG without files. Each planned range streams from its own source session (which
 * imports the coordinator's exported snapshot) through `COPY … TO STDOUT` straight into
 * `COPY … FROM STDIN` on its own target session, into its own UNLOGGED staging table; one pipeline
 * carries backpressure from the target back to the source. Then one target transaction behind the
 * commit fence moves every staging table into the target. Other sessions fill the staging tables,
 * so they are committed tables: the staging guard drops them on every failure, and a retried load
 * first drops what a vanished worker left under the same operation's names.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { ErrorCode, PgExtractError } from '../errors';
import { FailureDisposition, type RowEvidence, ownedStagingHandle } from '../lifecycle';
import type { OutputSink, StoredOutput } from '../storage/output-sink';
import { digestSourceToken } from '../postgres/source-token';
import type { ExportFormat } from '../contract/formats';
import { partName } from '../contract/file-names';
import { copyInSql } from '../postgres/export-format';
import { copyPartition } from '../postgres/partition-copy';
import type { SnapshotPlan } from '../postgres/snapshot-coordinator';
import { quoteQualified } from '../postgres/sql';
import { requireBinaryTypes } from './binary-types';
import { operationStagingStem, streamIntentDigest } from './load-identity';
import { type LoadControl, type LoadResult, ensureFence, fencedTransaction, recordedLoad } from './loader';
import { createStagingSql, emptyForReplace, moveIntoTarget, withRelkinds } from './table-fill';
import { sequencesPastRows } from './sequences';
import { withServerSearchPath } from '../postgres/session';

/** Ranges streamed at once: each holds one source and one target session. */
const STREAMS_AT_ONCE = 8;

export interface StreamRequest {
  /** The coordinator's plan: snapshot, table and ranges. Its transaction stays open while this runs. */
  plan: SnapshotPlan;
  /** The resolved target table. */
  schema: string;
  table: string;
  mode: 'append' | 'replace';
  /** CSV or binary on the wire; no header, no gzip (nothing is stored). */
  format: ExportFormat['format'];
  lockTimeoutMs: number;
  /** Stable per run: a retried load has the same id, so it finds its fence row and its predecessor's staging tables. */
  operationId: string;
}

/** Fresh sessions, one per use; the caller's `fence` session runs the final transaction. */
export interface StreamSessions {
  source: () => Promise<Client>;
  target: () => Promise<Client>;
  close: (client: Client) => Promise<void>;
}

/** A COPY FROM on a target session as the output of a partition copy: nothing is stored, so commit and discard have nothing to do. */
class StagingSink implements OutputSink {
  private copy: ReturnType<typeof copyFrom> | null = null;
  constructor(
    private readonly client: Client,
    private readonly sql: string,
    readonly location: string,
  ) {}
  /** Rows the target reported; valid once the pipeline into {@link open}'s writable has finished. */
  get rows(): number {
    return this.copy?.rowCount ?? 0;
  }
  open(): ReturnType<typeof copyFrom> {
    this.copy = this.client.query(copyFrom(this.sql));
    return this.copy;
  }
  async commit(): Promise<StoredOutput> {
    // The writable finishes only after the target's CommandComplete: the rows are in staging.
    return { location: this.location, etag: null };
  }
  async discard(): Promise<void> {
    // A destroyed COPY FROM sends CopyFail (the target rolls that COPY back); the staging guard drops the table.
  }
}

/**
 * Streams every range of `request.plan` into staging and moves it into the target in one fenced
 * transaction on `fence`; returns the fence's answer. `onStreamed` gets row evidence per range
 * once every range is in staging, before the move (never when the fence answered before the
 * stream: nothing was read); it refuses the read by throwing, and nothing is moved. An
 * `already_committed` after it (an attempt committed while this one streamed) means the target
 * holds another read than this one. The caller ends the coordinator's transaction once the
 * outcome is known.
 */
export async function streamIntoTarget(
  fence: Client,
  sessions: StreamSessions,
  request: StreamRequest,
  { signal, onBytes, onStreamed }: LoadControl & { onStreamed?: (evidence: RowEvidence[]) => Promise<void> } = {},
): Promise<LoadResult> {
  const { plan } = request;
  const target = quoteQualified(request.schema, request.table);
  // Names of this attempt's own: an earlier attempt still running (its worker cut off from Temporal,
  // not from the databases) finds its tables gone, and cannot COPY a range into this attempt's.
  const prefix = `${stagingPrefix(request.operationId)}${randomBytes(4).toString('hex')}_`;
  const staging = plan.ranges.map((_, i) => quoteQualified(request.schema, `${prefix}${i}`));
  // Each range's fields load by name: staging holds the source's columns, the move names them.
  const columns = plan.table.columns.map((c) => c.name);
  const digest = streamIntentDigest(request);
  const { result } = await ownedStagingHandle({
    create: async () => {
      await dropStreamStaging(fence, request.schema, request.operationId);
      await withServerSearchPath(fence, async () => {
        for (const name of staging) await fence.query(createStagingSql(name, target, columns, 'UNLOGGED'));
      });
    },
    // On a fresh session: the fence session may be the one whose connection failed. This attempt's
    // tables only: a retry running meanwhile has tables of its own under the operation's prefix.
    drop: async () => {
      const client = await sessions.target();
      try {
        await dropStagingTables(client, request.schema, prefix);
      } finally {
        await sessions.close(client);
      }
    },
    materialize: async () => {
      // An attempt that committed is answered before anything is read. One still committing is
      // not seen here; the move's claim waits for it.
      await ensureFence(fence);
      const recorded = await recordedLoad(fence, request.operationId, digest);
      if (recorded) return recorded;
      await requireBinaryTypes(fence, request.format, [{ ...request, columns, columnTypes: plan.table.columns.map((c) => c.pgType) }]);
      // Streamed before the fenced transaction begins: its claim takes a transaction id, which
      // would hold back the target's vacuum horizon for as long as the ranges stream.
      const evidence = await streamRanges(sessions, request, staging, { signal, onBytes });
      await onStreamed?.(evidence);
      signal?.throwIfAborted();
      return fencedTransaction(
        fence,
        request.operationId,
        digest,
        `${request.schema}.${request.table}`,
        async () => {
          const into = (await withRelkinds(fence, [request]))[0]!;
          if (request.mode === 'replace') await withServerSearchPath(fence, () => emptyForReplace(fence, into));
          for (const name of staging) await moveIntoTarget(fence, name, into, 'append', columns);
          await sequencesPastRows(fence, [request]);
          return evidence.reduce((sum, e) => sum + e.rows, 0);
        },
        signal,
      );
    },
  });
  // The fence answered without this load writing: its empty staging tables are not moved, so drop them.
  if (result.status === 'already_committed') await dropStagingTables(fence, request.schema, prefix);
  return result;
}

function stagingPrefix(operationId: string): string {
  return `${operationStagingStem(operationId)}_`;
}

/** Drops the staging tables of operation `operationId` in `schema`, whichever attempt (or vanished worker) left them. */
export async function dropStreamStaging(client: Client, schema: string, operationId: string): Promise<void> {
  await dropStagingTables(client, schema, stagingPrefix(operationId));
}

/** Drops the tables of `schema` whose names start with `prefix`. */
async function dropStagingTables(client: Client, schema: string, prefix: string): Promise<void> {
  const left = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND left(c.relname, length($2)) = $2`,
    [schema, prefix],
  );
  if (left.rows.length === 0) return;
  await withServerSearchPath(client, async () => {
    for (const { name } of left.rows) await client.query(`DROP TABLE IF EXISTS ${quoteQualified(schema, name)}`);
  });
}

/**
 * Streams the ranges, at most {@link STREAMS_AT_ONCE} at a time. The first failure stops the
 * others (their COPYs are cancelled) and is thrown once every stream has ended, so nothing
 * still writes into staging when the guard drops it.
 */
async function streamRanges(sessions: StreamSessions, request: StreamRequest, staging: string[], control: LoadControl): Promise<RowEvidence[]> {
  const stop = new AbortController();
  const signal = control.signal ? AbortSignal.any([control.signal, stop.signal]) : stop.signal;
  const bytes = staging.map(() => 0);
  const evidence: RowEvidence[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < staging.length && !signal.aborted; i = next++) {
      const onBytes = (n: number): void => {
        bytes[i] = n;
        control.onBytes?.(bytes.reduce((a, b) => a + b, 0));
      };
      try {
        evidence[i] = await streamRange(sessions, request, i, staging[i]!, signal, onBytes);
      } catch (err) {
        stop.abort(err);
        throw err;
      }
    }
  };
  const ended = await Promise.allSettled(Array.from({ length: Math.min(STREAMS_AT_ONCE, staging.length) }, worker));
  const failed = ended.find((e): e is PromiseRejectedResult => e.status === 'rejected');
  if (failed) throw stop.signal.reason ?? failed.reason;
  control.signal?.throwIfAborted();
  return evidence;
}

/** One range: a source session importing the snapshot, COPY TO piped into COPY FROM on a target session; both counts must agree. */
async function streamRange(
  sessions: StreamSessions,
  request: StreamRequest,
  i: number,
  staging: string,
  signal: AbortSignal,
  onBytes: (n: number) => void,
): Promise<RowEvidence> {
  const { plan } = request;
  const format: ExportFormat = { format: request.format, header: false, gzip: false };
  const name = `${plan.table.schema}.${plan.table.table}/${partName(i)}`;
  const [source, target] = await Promise.all([sessions.source(), sessions.target()]);
  try {
    const columns = plan.table.columns.map((c) => c.name);
    const sink = new StagingSink(target, copyInSql(staging, format, columns), name);
    // Staging has the target's column types: a domain's CHECK runs as the COPY fills it.
    const copied = await withServerSearchPath(target, () =>
      copyPartition(
        source,
        {
          snapshotId: plan.snapshotId,
          snapshotDigest: digestSourceToken(plan.snapshotText),
          source: plan.source,
          table: { schema: plan.table.schema, table: plan.table.table, columns },
          key: plan.table.key,
          range: plan.ranges[i]!,
          format,
          lockTimeoutMs: request.lockTimeoutMs,
        },
        sink,
        { onBytes, signal },
      ),
    );
    if (copied.rows !== sink.rows) {
      throw Object.assign(
        new PgExtractError(ErrorCode.TARGET_CHECKSUM_MISMATCH, `${name}: the source sent ${copied.rows} rows, the target took ${sink.rows}`),
        {
          disposition: FailureDisposition.cleanupSafe,
        },
      );
    }
    // Nothing is stored, so there are no bytes or checksum to prove later: the rows are the evidence.
    return { name, rows: copied.rows, bytes: null, sha256: null };
  } finally {
    await Promise.all([sessions.close(source), sessions.close(target)]);
  }
}

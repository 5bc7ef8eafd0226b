/**
 * The built-in target owner for PostgreSQL: load a manifest's files into a target table in one
 * transaction, guarded by a commit fence. The files are COPYed in and verified against the
 * manifest's rows and sha256 (see table-fill.ts), and the fence row `(operation_id, intent_digest)`
 * is written in the same transaction. If COMMIT's acknowledgement is lost, {@link reconcileCommit}
 * asks the target what became of that transaction (its xid, recorded before COMMIT); a retried
 * load finds its fence row and loads nothing twice.
 */
import type { Readable } from 'node:stream';
import { type Client, DatabaseError } from 'pg';
import { ErrorCode, PgExtractError } from '../errors';
import { FailureDisposition } from '../lifecycle';
import type { ExportFormat } from '../contract/formats';
import { quoteIdent, quoteQualified } from '../postgres/sql';
import { requireBinaryTypes } from './binary-types';
import { sequencesPastRows } from './sequences';
import { filesIntentDigest } from './load-identity';
import { fillTable } from './table-fill';
import { rollbackAfter, useServerSearchPath, withServerSearchPath } from '../postgres/session';

/** The fence lives in its own schema on the target (`pg_` names are reserved by PostgreSQL). */
const FENCE_SCHEMA = 'pgextract';
const FENCE_TABLE = 'commit_fence';
const FENCE = quoteQualified(FENCE_SCHEMA, FENCE_TABLE);

export interface LoadFile {
  /** Where the manifest says the file is (a local path or an `s3://` URL), for messages. */
  path: string;
  rows: number;
  sha256: string;
  /** Opens the file's bytes, wherever its store keeps them. */
  open(): Promise<Readable>;
}

export interface LoadRequest {
  files: LoadFile[];
  format: ExportFormat;
  schema: string;
  table: string;
  /** The files' columns in file order, loaded by name; absent: by position (a load scheduled by an earlier release). */
  columns?: readonly string[];
  /** With binary files: each column's source type, which its target column must have (see binary-types.ts). */
  columnTypes?: readonly string[];
  mode: 'append' | 'replace';
  /** Stable per extraction attempt: the same load retried has the same id. */
  operationId: string;
}

/**
 * TARGET_COMMIT_AMBIGUOUS: COMMIT was sent and its acknowledgement lost. `xid` is the transaction's
 * id, recorded before COMMIT, so {@link reconcileCommit} can ask the target for that transaction's fate.
 */
export class CommitUnacknowledged extends PgExtractError {
  readonly disposition = FailureDisposition.preserveEvidence;
  constructor(
    readonly xid: string,
    /** The rows the transaction wrote: what it loaded, should it prove committed. */
    readonly rows: number,
    cause: unknown,
  ) {
    super(ErrorCode.TARGET_COMMIT_AMBIGUOUS, 'the COMMIT was sent but its acknowledgement was lost', { cause });
  }
}

/**
 * Runs `work` inside one target transaction behind the fence: an operation already recorded
 * returns `already_committed`; otherwise the fence row is claimed, `work` writes, the row's count is
 * set, and COMMIT runs.
 * A lost COMMIT acknowledgement is {@link CommitUnacknowledged} (reconcile with {@link reconcileCommit}).
 * An aborted `signal` stops it before COMMIT (the transaction rolls back).
 */
export async function fencedTransaction(
  client: Client,
  operationId: string,
  digest: string,
  target: string,
  work: () => Promise<number>,
  signal?: AbortSignal,
): Promise<LoadResult> {
  await ensureFence(client);
  // READ COMMITTED whatever the target's default: under REPEATABLE READ a claim that waited for an
  // earlier attempt's COMMIT fails with a serialization error instead of seeing that attempt's row.
  await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
  try {
    // Deferrable keys are checked at COMMIT: rows that reference each other across files (a self-reference split
    // into ranges, a cycle of tables) load in any order. A key that is not deferrable is checked per statement.
    await client.query('SET CONSTRAINTS ALL DEFERRED');
    // The fence row is claimed before any write: an earlier attempt of this operation still in its
    // transaction (its worker vanished mid-COMMIT) holds the row's key, so the claim waits for that
    // COMMIT and then answers from it. Claimed after the writes, the wait came at the target's own
    // keys instead, as a unique violation that reported a committed load as failed.
    if (!(await claimFence(client, operationId, digest, target))) {
      const recorded = (await recordedLoad(client, operationId, digest))!;
      await client.query('ROLLBACK');
      return recorded;
    }
    const rows = await work();
    signal?.throwIfAborted();
    await client.query(`UPDATE ${FENCE} SET rows = $2 WHERE operation_id = $1`, [operationId, rows]);
    const xid = (await client.query<{ xid: string }>('SELECT pg_catalog.pg_current_xact_id()::text AS xid')).rows[0]!.xid;
    // Deferred triggers fire at COMMIT: under the path the target's own statements run with.
    await useServerSearchPath(client);
    try {
      await client.query('COMMIT');
    } catch (err) {
      // The server answered with an error and kept the session: the COMMIT failed and the transaction
      // rolled back (a deferred constraint, a serialization failure), an error of its own code. A
      // session gone with it (FATAL, a cut connection) leaves the COMMIT's fate open. (Its severity
      // word cannot tell: the server writes it in its own language.)
      if (err instanceof DatabaseError && (await sessionAnswers(client))) throw err;
      throw new CommitUnacknowledged(xid, rows, err);
    }
    return { status: 'committed', rows, intentDigest: digest };
  } catch (err) {
    if (!(err instanceof CommitUnacknowledged)) {
      await rollbackAfter(client, err, 'target');
    }
    throw err;
  }
}

/**
 * What the fence (made: see {@link ensureFence}) records for `operationId` as this session sees it:
 * `already_committed` when an attempt committed the same intent, null when none did (an attempt
 * still in its transaction is not seen; only a claim waits for it). A different intent is
 * TARGET_FENCE_CONFLICT.
 */
export async function recordedLoad(client: Client, operationId: string, digest: string): Promise<LoadResult | null> {
  const recorded = await recordedFence(client, operationId);
  if (recorded === null) return null;
  if (recorded.digest !== digest) {
    throw failure(ErrorCode.TARGET_FENCE_CONFLICT, `operation ${operationId} already committed a different load`, FailureDisposition.preserveEvidence);
  }
  return { status: 'already_committed', rows: recorded.rows, intentDigest: digest };
}

/** A load's end: committed now, or by an earlier attempt; `rows` as the fence records them. */
export type LoadResult = { status: 'committed' | 'already_committed'; rows: number; intentDigest: string };

function failure(code: ErrorCode, message: string, disposition: string, cause?: unknown): PgExtractError {
  return Object.assign(new PgExtractError(code, message, { cause }), { disposition });
}

/** The fence's columns: what the first load creates, and what an administrator creates for a role that may not (README). */
export const FENCE_COLUMNS =
  'operation_id text PRIMARY KEY, intent_digest text NOT NULL, target text NOT NULL, rows bigint NOT NULL, committed_at timestamptz NOT NULL DEFAULT now()';

/** SQLSTATEs of a CREATE that met the same name committed meanwhile: unique violation, duplicate schema, duplicate table. */
const CREATED_MEANWHILE = new Set(['23505', '42P06', '42P07']);

/**
 * Creates the fence unless it is there. Once it is (an earlier load made it, or an administrator did
 * for a role without CREATE on the database), nothing is created: `CREATE SCHEMA IF NOT EXISTS` checks
 * that privilege even when the schema exists. Two loads creating it at once both find it missing; the
 * second waits for the first's transaction and then fails on the name (SQLSTATE 23505), so it looks
 * once more, in a transaction of its own, which takes in what the first committed. (No advisory lock:
 * a session lock would outlive its transaction's server connection behind a transaction pooler.)
 */
export async function ensureFence(client: Client): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    if (await fenceMade(client)) return;
    await client.query('BEGIN');
    try {
      // DDL fires the target's event triggers, if any: under its role's path.
      await withServerSearchPath(client, async () => {
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(FENCE_SCHEMA)}`);
        await client.query(`CREATE TABLE IF NOT EXISTS ${FENCE} (${FENCE_COLUMNS})`);
      });
      await client.query('COMMIT');
      return;
    } catch (err) {
      await rollbackAfter(client, err, 'target');
      if (attempt > 1 || !CREATED_MEANWHILE.has(String((err as { code?: unknown }).code))) throw err;
    }
  }
}

/** Whether the fence is there, as this session sees the catalog. */
async function fenceMade(client: Client): Promise<boolean> {
  return (await client.query<{ made: boolean }>('SELECT pg_catalog.to_regclass($1) IS NOT NULL AS made', [FENCE])).rows[0]!.made;
}

/** What a running load listens to and reports. */
export interface LoadControl {
  /** Checked before each statement; the caller cancels a statement already running on the server. */
  signal?: AbortSignal;
  /** Bytes of the files read so far. */
  onBytes?: (bytes: number) => void;
}

/**
 * Loads on `client` (a fresh target session). Throws with a `disposition` the outcome mapping
 * understands: a checksum mismatch is cleanup-safe (abort); a lost COMMIT acknowledgement is
 * TARGET_COMMIT_AMBIGUOUS and must be reconciled.
 */
export async function loadIntoTarget(client: Client, request: LoadRequest, { signal, onBytes }: LoadControl = {}): Promise<LoadResult> {
  let bytes = 0;
  return fencedTransaction(
    client,
    request.operationId,
    filesIntentDigest(request),
    `${request.schema}.${request.table}`,
    async () => {
      await requireBinaryTypes(client, request.format.format, [request]);
      const rows = await fillTable(client, request, signal, (n) => onBytes?.((bytes += n)));
      await sequencesPastRows(client, [request]);
      return rows;
    },
    signal,
  );
}

/** What the target says about an operation whose COMMIT is ambiguous. */
export type Reconciliation = 'committed' | 'not_committed' | 'unknown';

/** How long {@link reconcileCommit} waits for a COMMIT still running (deferred triggers, a synchronous standby). */
const COMMIT_WAIT_MS = 60_000;
const COMMIT_POLL_MS = 200;

/**
 * Asks a fresh session for the fate of transaction `xid`: committed or aborted is final; in
 * progress (the COMMIT is still landing) is polled until `waitMs`, then `unknown`. An xid too old
 * for the commit log (NULL) falls back to the fence row. An unreachable target is `unknown`.
 */
export async function reconcileCommit(
  open: () => Promise<Client>,
  commit: { operationId: string; digest: string; xid: string },
  waitMs = COMMIT_WAIT_MS,
): Promise<Reconciliation> {
  let client: Client | undefined;
  try {
    client = await open();
    for (const until = Date.now() + waitMs; ;) {
      const r = await client.query<{ status: string | null }>('SELECT pg_xact_status($1::xid8) AS status', [commit.xid]);
      const status = r.rows[0]?.status ?? null;
      if (status === 'committed') return 'committed';
      if (status === 'aborted') return 'not_committed';
      if (status === null) return await fenceVerdict(client, commit.operationId, commit.digest);
      if (Date.now() >= until) return 'unknown';
      await new Promise((resolve) => setTimeout(resolve, COMMIT_POLL_MS));
    }
  } catch {
    return 'unknown';
  } finally {
    await client?.end().catch(() => undefined);
  }
}

/**
 * Claims `operationId`'s fence row in the open transaction, its count 0 until the load sets it:
 * true when claimed, false when an attempt committed it. A claim still in another transaction
 * makes this wait for that transaction's end.
 */
async function claimFence(client: Client, operationId: string, digest: string, target: string): Promise<boolean> {
  const claimed = await client.query(
    `INSERT INTO ${FENCE} (operation_id, intent_digest, target, rows) VALUES ($1, $2, $3, 0) ON CONFLICT (operation_id) DO NOTHING RETURNING operation_id`,
    [operationId, digest, target],
  );
  return claimed.rows.length > 0;
}

/** Whether the session still answers a query. */
async function sessionAnswers(client: Client): Promise<boolean> {
  return client.query('SELECT 1').then(
    () => true,
    () => false,
  );
}

/** SQLSTATEs of a claim this session may not make: a read-only transaction (a standby), no INSERT on the fence. */
const CLAIM_REFUSED = new Set(['25006', '42501']);

/**
 * The rows an attempt of `operationId` committed, as its fence row records them; null when none
 * did (a fence never made holds none). Asked by a retried load that failed before it could claim
 * the fence itself. The probe is a claim rolled back, so it waits for an earlier attempt still in
 * its transaction, as a load's own claim does (a plain SELECT would not see that row yet), for at
 * most {@link COMMIT_WAIT_MS} (then it throws: unknown). Where this session may not claim, it
 * reads the fence as it is.
 */
export async function fenceRows(client: Client, operationId: string): Promise<number | null> {
  if (!(await fenceMade(client))) return null;
  await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
  try {
    await client.query(`SET LOCAL lock_timeout = ${COMMIT_WAIT_MS}`);
    if (await claimFence(client, operationId, '', '')) return null;
  } catch (err) {
    if (!CLAIM_REFUSED.has((err as { code?: string }).code ?? '')) throw err;
    await client.query('ROLLBACK');
  } finally {
    await client.query('ROLLBACK');
  }
  return (await recordedFence(client, operationId))?.rows ?? null;
}

/** What the fence row says: ours → committed, another intent → unknown, none → not committed. */
export async function fenceVerdict(client: Client, operationId: string, digest: string): Promise<Reconciliation> {
  const recorded = await recordedFence(client, operationId);
  if (recorded === null) return 'not_committed';
  return recorded.digest === digest ? 'committed' : 'unknown';
}

/** The intent digest and row count the fence row of `operationId` holds, as this session sees it; null without one. */
async function recordedFence(client: Client, operationId: string): Promise<{ digest: string; rows: number } | null> {
  const r = await client.query<{ intent_digest: string; rows: string }>(`SELECT intent_digest, rows::text FROM ${FENCE} WHERE operation_id = $1`, [
    operationId,
  ]);
  const row = r.rows[0];
  return row ? { digest: row.intent_digest, rows: Number(row.rows) } : null;
}

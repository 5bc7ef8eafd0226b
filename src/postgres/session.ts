/**
 * Opens one PostgreSQL session for one job. Every session we open is tagged with an
 * `application_name` (so tests and operators find ours in pg_stat_activity), pins the settings
 * that shape exported and loaded text (so a file never depends on the server's, database's or
 * role's defaults), keeps TCP keepalives on (so either end notices a vanished peer), gives up
 * connecting after a timeout (./connect-timeout.ts), and reads its URL's TLS as libpq does
 * (./connection-url.ts).
 */
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { Client, type ClientBase, type ClientConfig, DatabaseError, type QueryResult } from 'pg';
import { connectTimedOut, connectTimeoutMs } from './connect-timeout';
import { sessionTarget } from './connection-url';
import { reusedReadSocket } from './reused-read-socket';
import { ErrorCode, PgExtractError, addNote } from '../errors';

/** The application_name prefix of every session this product opens. */
export const APPLICATION_NAME = 'pg-extract';

/** Session roles, visible in pg_stat_activity.application_name as `pg-extract/<role>`. */
export type SessionRole = 'coordinator' | 'partition' | 'whole-copy' | 'stream' | 'target' | 'probe';

/**
 * pg calls this with its connection settings (its types leave the argument out). A TLS session's
 * socket is wrapped by pg's TLS socket, which reads it itself, so only plain sessions get a
 * {@link reusedReadSocket}.
 */
const sessionSocket = ((config: { ssl?: unknown }): Duplex => (config.ssl ? new Socket() : reusedReadSocket())) as unknown as () => Duplex;

/** Set after connecting rather than in the startup packet, where a connection URL's own `options` would replace them. */
const SESSION_SETTINGS: Record<string, string> = {
  // Text of dates, timestamps, intervals, floats and bytea, in the one form every loader reads back exactly.
  DateStyle: 'ISO, MDY',
  IntervalStyle: 'postgres',
  extra_float_digits: '3',
  bytea_output: 'hex',
  // Key bounds and exported timestamptz values read the same everywhere.
  TimeZone: 'UTC',
  // money's text follows lc_monetary ('1.234,56 €' under de_DE), which a target in another locale cannot read back.
  lc_monetary: 'C',
  // An XML value may be a fragment (several elements, text): read as a document, as a database may be set to, a load of
  // one fails. pg_dump sets it for the same reason.
  xmloption: 'content',
  // An array's unquoted NULL element is read as the string 'NULL' (or refused, for other element types) where a
  // database turned array_nulls off: a load would change such values.
  array_nulls: 'on',
  // The driver already asks for UTF8 at startup and decodes UTF8; listed so this is the whole contract.
  client_encoding: 'UTF8',
  // An export's COPY may run for hours, and the coordinator's transaction holds the snapshot for the whole run: a
  // role's statement_timeout or (PostgreSQL 17+) transaction_timeout must not end them. A server without a
  // setting skips it (below).
  statement_timeout: '0',
  transaction_timeout: '0',
  // The server ends the session of a vanished client host after about 25 s of silence, and of a
  // closed client socket within 5 s even while a query runs (PostgreSQL 14+; older servers skip it).
  // Neither ends the session of a stopped (SIGSTOP) worker, whose kernel still answers: the
  // coordinator's and a target's idle timeouts do, between statements.
  tcp_keepalives_idle: '10',
  tcp_keepalives_interval: '5',
  tcp_keepalives_count: '3',
  client_connection_check_interval: '5s',
  // A whole-table COPY of a table over a quarter of shared_buffers would otherwise start wherever
  // another session's scan of it has got to: a retry over the same snapshot would write the rows in
  // another order, so a file of other bytes under the same name. pg_dump turns it off for the same reason.
  synchronize_seqscans: 'off',
  // Our queries are COPYs and catalog lookups. JIT compiled a catalog lookup of ours (its estimated
  // cost passes jit_above_cost) on every session that resolved a table: about 0.15 CPU-s of the
  // backends in a 200-table run, where the work it compiles for takes milliseconds.
  jit: 'off',
};

/**
 * Set on the sessions that read a source table's rows. With row security on, a role subject to a
 * policy reads only the rows the policy shows it, and a copy of part of a table would pass for the
 * whole; off, such a read fails (SQLSTATE 42501, naming the table) and a role that bypasses row
 * security or owns the table reads every row, as pg_dump reads. Target sessions keep the server's
 * value: a load into a table with row security does what an INSERT would.
 */
const SOURCE_READ_SETTINGS: Record<string, string> = { row_security: 'off' };
const READS_SOURCE_ROWS: ReadonlySet<SessionRole> = new Set(['coordinator', 'partition', 'whole-copy', 'stream']);

/**
 * Set on the sessions that COPY a source's rows to the worker. A stopped worker in the middle of a COPY stops
 * reading: its backend waits to write (ClientWrite) for as long as it stays stopped, pinning the xmin horizon and its
 * table's lock, while Temporal has long given the partition to another worker. With a TCP user timeout the server's
 * kernel ends such a connection once nothing it sends has been taken for 10 minutes; a live worker stops reading only
 * while its output does not move (an S3 part upload retried after its 60 s idle timeout, at most three times). Linux
 * also ends a silent peer by the user timeout instead of by the keepalive count: on these sessions a vanished host is
 * dropped after 10 minutes, where between statements it took about 25 s (in a COPY, where keepalives do not apply, its
 * retransmissions took about 15). Not on other sessions, whose vanished host's target session (mid-COPY FROM, its
 * lock and fence claim held) or coordinator would stay 10 minutes, not 25 s.
 */
const SOURCE_COPY_SETTINGS: Record<string, string> = { tcp_user_timeout: '10min' };
const COPIES_SOURCE_ROWS: ReadonlySet<SessionRole> = new Set(['partition', 'whole-copy', 'stream']);

/**
 * Set on target sessions. A stopped worker (SIGSTOP, a frozen VM) keeps its sessions, its kernel
 * still answering keepalives: a load's left idle inside its transaction would keep its locks and
 * fence claim, which the load's retry waits behind, for as long as it stays stopped. The server
 * ends it after 10 minutes idle; a load pauses between its statements only to open its next file.
 * (Source sessions may sit idle in theirs far longer: a Parquet file is uploaded after its COPY,
 * inside the read's transaction. The coordinator sets 30 s for its own, kept alive by probes.)
 */
const TARGET_SETTINGS: Record<string, string> = { idle_in_transaction_session_timeout: '10min' };

/**
 * Set on every session: an empty search_path, as pg_dump and pg_restore set on their own. Every user
 * object we name is schema-qualified, so only pg_catalog resolves an unqualified name: a function or
 * operator that someone with CREATE on a schema of the role's or database's path placed there (one
 * matching an argument type better than pg_catalog's) is never called with our session's rights, and
 * reg* values (regclass, regproc…) outside pg_catalog are written schema-qualified, so they load
 * under any path. A target session keeps the server's path for the statements that fire the
 * target's own code ({@link withServerSearchPath}).
 */
const SECURE_SEARCH_PATH: Record<string, string> = { search_path: '' };

/** The search_path the server gave each target session, before the session set its own. */
const serverSearchPaths = new WeakMap<ClientBase, string>();

/**
 * Runs `run` under the search_path the server gives the target session's role: for statements that
 * run the target's own code (a trigger, a rule, a domain's CHECK, a default's or a view's functions,
 * an event trigger on DDL) as that role's own statements would; back to the empty path after. Set
 * for the session, so it holds outside a transaction too: inside one that fails, its rollback undoes
 * the setting. Not nested. A session that is not a target's runs `run` as it is.
 */
export async function withServerSearchPath<T>(client: ClientBase, run: () => Promise<T>): Promise<T> {
  const path = serverSearchPaths.get(client);
  if (path === undefined) return run();
  await client.query(`SELECT pg_catalog.set_config('search_path', $1, false)`, [path]);
  try {
    return await run();
  } finally {
    // Fails only in a transaction the failure aborted, whose rollback undoes the setting anyway.
    await client.query(`SELECT pg_catalog.set_config('search_path', '', false)`).catch(() => undefined);
  }
}

/** Sets the server's search_path on target session `client` until its transaction ends (its COMMIT fires deferred triggers). */
export async function useServerSearchPath(client: ClientBase): Promise<void> {
  const path = serverSearchPaths.get(client);
  if (path !== undefined) await client.query(`SELECT pg_catalog.set_config('search_path', $1, true)`, [path]);
}

/** What pg's connect fails with once its `connectionTimeoutMillis` has passed (its own error, never a server's). */
const PG_CONNECT_TIMED_OUT = 'timeout expired';

/** What pg's connect fails with when it asked for TLS and the server has none. */
const NO_TLS = 'The server does not support SSL connections';

/** What pg says of a query on a session whose connection has ended. */
const NOT_QUERYABLE = 'Client has encountered a connection error and is not queryable';

/** A query object pg hands the connection to (a COPY stream); pg reports its failure through `handleError`. */
interface ErrorHandlingSubmittable {
  submit: (...args: unknown[]) => void;
  handleError: (err: Error, ...rest: unknown[]) => void;
}

function isSubmittable(value: unknown): value is ErrorHandlingSubmittable {
  const v = value as Partial<ErrorHandlingSubmittable> | null;
  return typeof v?.submit === 'function' && typeof v.handleError === 'function';
}

/**
 * A client that keeps the error that ended its connection. A session that ends while idle (a
 * standby's recovery conflict, pg_terminate_backend, idle_in_transaction_session_timeout: all a
 * FATAL sent between queries) fails its next query with only pg's {@link NOT_QUERYABLE}; this one
 * fails it with the server's own error, whose SQLSTATE and message say what happened.
 */
class Session extends Client {
  #ended: Error | undefined;
  /** Stops cancelling on its signal's abort, once the cancel it started (if any) has been sent. */
  unwatch: () => Promise<void> = async () => undefined;

  constructor(config: ClientConfig) {
    super(config);
    // Also needed without the record: an unhandled 'error' on an idle client would crash the worker process.
    this.on('error', (err) => (this.#ended ??= err));
  }

  // Callers see pg's overloads (openSession returns a Client). The promise form and a submittable
  // (a COPY stream) are what we send; pg's callback form is left as pg reports it.
  override query(...args: unknown[]): any {
    const query = () => (super.query as (...a: unknown[]) => unknown).apply(this, args);
    const ended = this.#ended;
    if (!ended) return query();
    const named = (err: unknown) => (err instanceof Error && err.message === NOT_QUERYABLE ? ended : err);
    const [submittable] = args;
    if (isSubmittable(submittable)) {
      const handleError = submittable.handleError.bind(submittable);
      submittable.handleError = (err, ...rest) => handleError(named(err) as Error, ...rest);
    }
    const result = query();
    return result instanceof Promise
      ? result.catch((err: unknown) => {
          throw named(err);
        })
      : result;
  }
}

/** Options of {@link openSession}. */
export interface SessionOptions {
  /**
   * For the session's whole life, an abort cancels the statement it is running from a second, short
   * session (pg_cancel_backend): a wait for a lock, or a long query, ends at once with 57014, where
   * closing the socket leaves the backend waiting until it next writes (a lock wait, until its
   * lock_timeout). A session opened after the abort is closed, and the abort's reason thrown.
   */
  signal?: AbortSignal;
}

export async function openSession(url: string, role: SessionRole, options: SessionOptions = {}): Promise<Client> {
  const connectionTimeoutMillis = connectTimeoutMs(url);
  const { config, plainIfRefused } = sessionTarget(url);
  const client = await connected({ ...config, connectionTimeoutMillis }, role).catch((err: unknown) => {
    // libpq's allow and prefer ask a server without TLS again without it.
    if (plainIfRefused && err instanceof Error && err.message === NO_TLS) return connected({ ...config, connectionTimeoutMillis, ssl: false }, role);
    throw err;
  });
  const settings = {
    ...SESSION_SETTINGS,
    ...(READS_SOURCE_ROWS.has(role) ? SOURCE_READ_SETTINGS : {}),
    ...(COPIES_SOURCE_ROWS.has(role) ? SOURCE_COPY_SETTINGS : {}),
    ...(role === 'target' ? TARGET_SETTINGS : {}),
    ...SECURE_SEARCH_PATH,
  };
  try {
    if (role === 'target') {
      const answer = (await client.query(`SELECT pg_catalog.current_setting('search_path') AS path`)) as QueryResult<{ path: string }>;
      serverSearchPaths.set(client, answer.rows[0]!.path);
    }
    // Qualified: the session's search_path is still the role's or database's here. The count makes every row's set_config run.
    const set = (await client.query(
      `SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4 AS version, pg_catalog.pg_backend_pid() AS pid,
              (SELECT a.backend_start::pg_catalog.text FROM pg_catalog.pg_stat_activity a WHERE a.pid = pg_catalog.pg_backend_pid()) AS started,
              pg_catalog.count(*) FROM (
         SELECT pg_catalog.set_config(name, value, false) FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.text[])) AS s(name, value)
          WHERE pg_catalog.current_setting(name, true) IS NOT NULL) s`,
      [Object.keys(settings), Object.values(settings)],
    )) as QueryResult<{ version: number; pid: number; started: string | null }>;
    if (READS_SOURCE_ROWS.has(role)) requireSourceVersion(set.rows[0]!.version);
    // The server's own pid, not the BackendKeyData's (a pooler in between answers with one of its own), and when it started.
    if (options.signal) watchAborts(url, client, set.rows[0]!, options.signal);
  } catch (err) {
    await closeSession(client);
    throw err;
  }
  return client;
}

/** The oldest source server: its catalog's partition queries read `pg_inherits.inhdetachpending` (PostgreSQL 14). */
const MIN_SOURCE_VERSION_NUM = 140_000;

/** Refuses a source server older than {@link MIN_SOURCE_VERSION_NUM} (`server_version_num`), before anything is read. */
export function requireSourceVersion(versionNum: number): void {
  if (versionNum < MIN_SOURCE_VERSION_NUM) {
    const major = Math.floor(versionNum / 10_000);
    throw new PgExtractError(ErrorCode.SOURCE_VERSION_UNSUPPORTED, `the source server is PostgreSQL ${major}; pg-extract reads PostgreSQL 14 or newer`);
  }
}

/** A connected {@link Session} for `config` (the URL's settings, read by ./connection-url.ts). */
async function connected(config: ClientConfig, role: SessionRole): Promise<Session> {
  const { connectionTimeoutMillis = 0 } = config;
  const client = new Session({
    ...config,
    application_name: `${APPLICATION_NAME}/${role}`,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    stream: sessionSocket,
  });
  await client.connect().catch((err: unknown) => {
    // pg ends a connect that outlived its timeout by destroying the socket with this bare message.
    const timedOut = connectionTimeoutMillis > 0 && err instanceof Error && !(err instanceof DatabaseError) && err.message === PG_CONNECT_TIMED_OUT;
    if (timedOut) throw connectTimedOut(client.host, client.port, connectionTimeoutMillis, err);
    throw certificateRefused(client.host, client.port, err) ?? loginRefused(role, err) ?? err;
  });
  return client;
}

/**
 * Node's errors for a certificate it refused: an unknown or self-signed issuer, a name the certificate
 * does not carry, dates it is not valid for. Node says only "unable to verify the first
 * certificate", with no server named, and the error was retried as if it could pass.
 */
const CERTIFICATE_ERRORS = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'HOSTNAME_MISMATCH',
  'CERT_REVOKED',
  'CERT_SIGNATURE_FAILURE',
]);

/** A refused login: a wrong password (28P01), a role that does not exist or a host pg_hba.conf turns away (28000). */
const LOGIN_REFUSED = new Set(['28P01', '28000']);

/** SOURCE_AUTH_FAILED or TARGET_AUTH_FAILED, not retried (the same credentials fail again), if the server refused the login. */
function loginRefused(role: SessionRole, err: unknown): PgExtractError | undefined {
  if (!(err instanceof DatabaseError) || !LOGIN_REFUSED.has(err.code ?? '')) return undefined;
  const [code, side] = role === 'target' ? [ErrorCode.TARGET_AUTH_FAILED, 'target'] : [ErrorCode.SOURCE_AUTH_FAILED, 'source'];
  return new PgExtractError(code, `the PostgreSQL ${side} refused the login: ${err.message}`, { field: side, cause: err });
}

/** TLS_CERTIFICATE_REFUSED naming the server, if `err` is Node's refusal of its certificate. */
function certificateRefused(host: string, port: number, err: unknown): PgExtractError | undefined {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !CERTIFICATE_ERRORS.has(code)) return undefined;
  const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new PgExtractError(ErrorCode.TLS_CERTIFICATE_REFUSED, `the certificate of ${where} was refused: ${(err as Error).message} (${code})`, {
    field: 'sslmode',
    cause: err,
  });
}

/**
 * The cancels each signal starts when it aborts: one listener a signal however many sessions it
 * watches (a stream load's ranges open two each, and Node warns past ten listeners on a signal).
 */
const cancelsOnAbort = new WeakMap<AbortSignal, Set<() => void>>();

/** Cancels the statement `client` runs when `signal` aborts (see {@link SessionOptions.signal}); throws at once if it has. */
function watchAborts(url: string, client: Session, backend: Backend, signal: AbortSignal): void {
  signal.throwIfAborted();
  let cancels = cancelsOnAbort.get(signal);
  if (!cancels) {
    const started = (cancels = new Set());
    cancelsOnAbort.set(signal, started);
    signal.addEventListener('abort', () => started.forEach((cancel) => cancel()), { once: true });
  }
  let cancelling: Promise<void> | undefined;
  const cancel = (): void => void (cancelling = cancelBackend(url, backend));
  cancels.add(cancel);
  client.unwatch = async () => {
    cancels.delete(cancel);
    await cancelling;
  };
}

/** Ends the session, once a cancel its signal started has been sent; never throws (a dead connection is already closed). */
export async function closeSession(client: Client): Promise<void> {
  if (client instanceof Session) await client.unwatch();
  await client.end().catch(() => undefined);
}

/**
 * Rolls back the transaction `err` ended, and keeps `err` the error that is thrown: a failed
 * ROLLBACK (most often a session the failure already closed) becomes a note on it, `<what> rollback
 * failed: <code>`, rather than hiding it.
 */
export async function rollbackAfter(client: ClientBase, err: unknown, what: string): Promise<void> {
  await client
    .query('ROLLBACK')
    .catch((rollbackErr: unknown) => addNote(err, `${what} rollback failed: ${(rollbackErr as { code?: string }).code ?? 'Error'}`));
}

/** A server backend: its pid, and when it started (null where pg_stat_activity hides it), which no other backend with its pid shares. */
interface Backend {
  pid: number;
  started: string | null;
}

/**
 * Cancels whatever `backend` is running, if it is still that backend: a session already closed may
 * have left its pid to another, and a host name that resolves to several servers may send the cancel
 * to one where the pid is someone else's. Best effort (a failed cancel leaves the statement to end on its own).
 */
async function cancelBackend(url: string, backend: Backend): Promise<void> {
  if (backend.started === null) return;
  const probe = await openSession(url, 'probe').catch(() => null);
  if (!probe) return;
  await probe
    .query(`SELECT pg_catalog.pg_cancel_backend(a.pid) FROM pg_catalog.pg_stat_activity a WHERE a.pid = $1 AND a.backend_start = $2::pg_catalog.timestamptz`, [
      backend.pid,
      backend.started,
    ])
    .catch(() => undefined);
  await closeSession(probe);
}

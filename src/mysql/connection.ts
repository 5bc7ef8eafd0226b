/**
 * Opens one MySQL/MariaDB session for one job (mysql2). Each session is tagged with its role
 * (connection attribute `program_name`, `pg-extract/<role>`), reads in UTC, quotes identifiers
 * the ANSI way (so the one quoting helper, src/postgres/sql.ts, serves both sources), escapes
 * values with backslashes as the driver does, and is read only. A refused login is
 * SOURCE_AUTH_FAILED: retrying the same credentials cannot help. TLS is read from the URL as
 * MySQL's clients read it (./connection-url.ts).
 */
import type { Connection } from 'mysql2';
import { ErrorCode, PgExtractError } from '../errors';
import { type MysqlTls, mysqlTarget } from './connection-url';

export type MysqlRole = 'planner' | 'partition';

/** mysql2's code for a server that offers no TLS to a session that asked for it. */
const NO_TLS = 'HANDSHAKE_NO_SSL_SUPPORT';

/** Server errors that mean the credentials (or the grant on the database) were refused. */
const AUTH_ERRNOS = new Set([1044, 1045, 1698]);

const SESSION_SETTINGS = [
  "SET SESSION time_zone = '+00:00'",
  // mysql2 escapes a quote in a value as \', which NO_BACKSLASH_ESCAPES (a server may default to it) would read as a
  // backslash and the end of the string: a table name could then rewrite a catalog query. So it goes.
  "SET SESSION sql_mode = CONCAT(TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@sql_mode, ','), ',NO_BACKSLASH_ESCAPES,', ',')), ',ANSI_QUOTES')",
  // The client sends no statement that writes; the server enforces it too.
  'SET SESSION TRANSACTION READ ONLY',
];

export async function openMysql(url: string, role: MysqlRole): Promise<Connection> {
  // `mariadb://` is the same protocol.
  const { uri, ssl, plainIfRefused } = mysqlTarget(url.replace(/^mariadb:/i, 'mysql:'));
  return connected(uri, ssl, role).catch((err: unknown) => {
    // ssl-mode=PREFERRED asks a server without TLS again without it, as MySQL's clients do.
    if (plainIfRefused && (err as { code?: string }).code === NO_TLS) return connected(uri, undefined, role);
    throw err;
  });
}

async function connected(uri: string, ssl: MysqlTls | undefined, role: MysqlRole): Promise<Connection> {
  // Loaded on first use: a worker that reads no MySQL source does not carry the driver.
  const { createConnection } = await import('mysql2');
  const conn = createConnection({
    uri,
    ...(ssl ? { ssl } : {}),
    charset: 'UTF8MB4_BIN',
    supportBigNumbers: true,
    bigNumberStrings: true,
    dateStrings: true,
    connectAttributes: { program_name: `pg-extract/${role}` },
    connectTimeout: 10_000,
  });
  // An unhandled 'error' on an idle connection (server gone) would crash the worker process.
  conn.on('error', () => undefined);
  try {
    await conn.promise().connect();
    for (const statement of SESSION_SETTINGS) await conn.promise().query(statement);
  } catch (err) {
    conn.destroy();
    const errno = (err as { errno?: number }).errno;
    if (errno !== undefined && AUTH_ERRNOS.has(errno)) {
      throw new PgExtractError(ErrorCode.SOURCE_AUTH_FAILED, `the MySQL source refused the login: ${(err as Error).message}`, { field: 'source', cause: err });
    }
    throw err;
  }
  return conn;
}

/** Ends the session; never throws (a dead connection is already closed). */
export async function closeMysql(conn: Connection): Promise<void> {
  await conn
    .promise()
    .end()
    .catch(() => conn.destroy());
}

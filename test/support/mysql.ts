/** One MariaDB server per test run, started on first use and stopped by the root hooks; admin helpers on it. */
import { type Connection, createConnection } from 'mysql2/promise';
import { type MysqlService, startMysql } from '../../devenv/mysql-service';

let started: Promise<MysqlService> | undefined;

export function mysqlService(): Promise<MysqlService> {
  started ??= startMysql();
  return started;
}

/** A root session (on the socket) with multiple statements, for seeding; the caller ends it. */
export async function mysqlAdmin(): Promise<Connection> {
  const service = await mysqlService();
  return createConnection({ socketPath: service.socket, user: 'root', database: service.database, multipleStatements: true });
}

/** Sessions and open transactions of the reader user the product connects as (root's own are not counted). */
export async function readerActivity(): Promise<{ sessions: number; transactions: number }> {
  const service = await mysqlService();
  const root = await mysqlAdmin();
  try {
    const [sessions] = await root.query('SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE USER = ?', [service.user]);
    const [transactions] = await root.query(
      'SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE p.USER = ?',
      [service.user],
    );
    return { sessions: Number((sessions as { n: number }[])[0]!.n), transactions: Number((transactions as { n: number }[])[0]!.n) };
  } finally {
    await root.end();
  }
}

/** Waits (briefly) until the reader has no session left; returns what is left. */
export async function settleReader(timeoutMs = 5000): Promise<{ sessions: number; transactions: number }> {
  for (const until = Date.now() + timeoutMs; ;) {
    const left = await readerActivity();
    if (left.sessions === 0 || Date.now() > until) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function stopMysql(): Promise<void> {
  const service = started;
  started = undefined;
  if (service) await (await service).stop();
}

/** The conformance kit against MariaDB: the generic MySQL adapter, which claims no snapshot. */
import { mysqlAdapter } from '../../src/mysql/mysql-adapter';
import { mysqlAdmin, mysqlService, settleReader } from '../support/mysql';
import { conformanceSuite } from './conformance';

conformanceSuite({
  name: 'mysql',
  adapter: async () => mysqlAdapter((await mysqlService()).url),
  async seed(rows) {
    const root = await mysqlAdmin();
    try {
      await root.query('DROP TABLE IF EXISTS conformance; CREATE TABLE conformance (id bigint PRIMARY KEY, name text)');
      await root.query(
        `INSERT INTO conformance WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
           SELECT n, CASE WHEN n % 5 = 0 THEN NULL WHEN n % 7 = 0 THEN CONCAT('a, "quoted"', CHAR(10), 'line ', n) ELSE CONCAT('name ', n) END FROM g`,
        [rows],
      );
    } finally {
      await root.end();
    }
    return { schema: (await mysqlService()).database, table: 'conformance' };
  },
  async liveResources() {
    const left = await settleReader();
    return left.sessions + left.transactions;
  },
});

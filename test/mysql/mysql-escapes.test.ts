/**
 * A MySQL server whose sql_mode has NO_BACKSLASH_ESCAPES (live MariaDB): the driver escapes a quote
 * in a value with a backslash, so each session takes that mode off, and a table name with a quote
 * is looked up as itself, never as a piece of the catalog query.
 */
import assert from 'node:assert/strict';
import { describeMysqlTable } from '../../src/mysql/catalog';
import { closeMysql, openMysql } from '../../src/mysql/connection';
import { ErrorCode } from '../../src/errors';
import { mysqlAdmin, mysqlService } from '../support/mysql';

describe('MySQL sessions under NO_BACKSLASH_ESCAPES (live MariaDB)', function () {
  this.timeout(60_000);
  let globalMode = '';

  before(async () => {
    const root = await mysqlAdmin();
    try {
      const [rows] = await root.query('SELECT @@GLOBAL.sql_mode AS mode');
      globalMode = (rows as { mode: string }[])[0]!.mode;
      await root.query(`DROP TABLE IF EXISTS \`it's\`, secret_things; CREATE TABLE \`it's\` (id int PRIMARY KEY, v varchar(8));
        CREATE TABLE secret_things (token varchar(64));
        SET GLOBAL sql_mode = CONCAT(@@GLOBAL.sql_mode, ',NO_BACKSLASH_ESCAPES')`);
    } finally {
      await root.end();
    }
  });
  after(async () => {
    const root = await mysqlAdmin();
    try {
      await root.query("SET GLOBAL sql_mode = ?; DROP TABLE IF EXISTS `it's`, secret_things", [globalMode]);
    } finally {
      await root.end();
    }
  });

  it('takes the mode off its sessions: a name with a quote finds its table, and one built to rewrite the query finds none', async () => {
    const service = await mysqlService();
    const conn = await openMysql(service.url, 'planner');
    try {
      const [rows] = await conn.promise().query('SELECT @@SESSION.sql_mode AS mode');
      assert.doesNotMatch((rows as { mode: string }[])[0]!.mode, /NO_BACKSLASH_ESCAPES/);
      assert.match((rows as { mode: string }[])[0]!.mode, /ANSI_QUOTES/);
      const table = await describeMysqlTable(conn, { schema: service.database, table: "it's" });
      assert.deepEqual(
        table.columns.map((c) => c.name),
        ['id', 'v'],
      );
      await assert.rejects(describeMysqlTable(conn, { schema: service.database, table: "x' OR TABLE_NAME = 'secret_things' -- " }), {
        code: ErrorCode.TABLE_NOT_FOUND,
      });
    } finally {
      await closeMysql(conn);
    }
  });
});

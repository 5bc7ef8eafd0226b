/** The conformance kit against PostgreSQL: the exported-snapshot adapter over the existing strategies. */
import { postgresAdapter } from '../../src/sources/postgres-adapter';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';
import { conformanceSuite } from './conformance';

conformanceSuite({
  name: 'postgresql',
  adapter: async () => postgresAdapter(live().pg.url),
  async seed(rows) {
    await admin().query('DROP SCHEMA IF EXISTS conformance CASCADE; CREATE SCHEMA conformance; CREATE TABLE conformance.t (id bigint PRIMARY KEY, name text)');
    await admin().query(
      `INSERT INTO conformance.t SELECT g, CASE WHEN g % 5 = 0 THEN NULL WHEN g % 7 = 0 THEN 'a, "quoted"' || chr(10) || 'line ' || g ELSE 'name ' || g END FROM generate_series(1, $1::int) g`,
      [rows],
    );
    return { schema: 'conformance', table: 't' };
  },
  liveResources: async () => (await settleSessions()).length,
});

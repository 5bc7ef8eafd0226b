/**
 * The built-in loader over a run of several tables, live: a parent and a child joined by a foreign
 * key load into a target schema in one transaction (parents first, so the key holds; replace
 * empties the set at once), a failure in the second table leaves the target untouched with no
 * staging, and bad mappings are refused with a code.
 */
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { startExtraction } from '../../src/client';
import { type ExtractionRequest, parseExtractionInput, parseNewRunInput } from '../../src/contract/extraction-input';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { targetTableOf } from '../../src/contract/target-mapping';
import { cli, cliJson, liveCliEnv } from '../support/cli';
import { admin, settleSessions } from '../support/database';
import { s3Service } from '../support/s3';
import { live } from '../support/services';
import { runToResult, withWorker } from '../support/worker';
import { lastAttempt, onTarget, orphanStagingTables, recreateTarget, targetUrl } from '../target/target-db';

const SUMS =
  'SELECT (SELECT count(*) FROM %s.parent)::int AS parents, (SELECT count(*) FROM %s.child)::int AS children, (SELECT sum(amount) FROM %s.child)::text AS total';
const sums = (schema: string): string => SUMS.replaceAll('%s', schema);
const targetSums = (): Promise<Record<string, unknown>> => onTarget(async (c) => (await c.query(sums('dst'))).rows[0]);

/** The child is the bigger table, so the manifest (biggest first) names it before its parent. */
const TARGET_DDL = `CREATE SCHEMA dst;
  CREATE TABLE dst.parent (id int PRIMARY KEY, name text);
  CREATE TABLE dst.child (id bigint PRIMARY KEY, parent_id int NOT NULL REFERENCES dst.parent, amount numeric(12,2))`;

describe('built-in loader over a set of tables (live)', function () {
  this.timeout(180_000);
  let source: Record<string, unknown>;
  before(async () => {
    await admin().query(`
      DROP SCHEMA IF EXISTS sload CASCADE; CREATE SCHEMA sload;
      CREATE TABLE sload.parent (id int PRIMARY KEY, name text);
      CREATE TABLE sload.child (id bigint PRIMARY KEY, parent_id int NOT NULL REFERENCES sload.parent, amount numeric(12,2));
      INSERT INTO sload.parent SELECT g, 'p' || g FROM generate_series(1, 200) g;
      INSERT INTO sload.child SELECT g, 1 + g % 200, g * 0.25 FROM generate_series(1, 6000) g;
      ANALYZE sload.parent, sload.child`);
    source = (await admin().query(sums('sload'))).rows[0];
  });
  beforeEach(() => recreateTarget(TARGET_DDL));
  afterEach(async () => {
    assert.equal(await orphanStagingTables(), 0, 'no staging table left');
    assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
  });

  const run = (
    request: Omit<ExtractionRequest, 'source'>,
    onEnd?: (handle: WorkflowHandle) => Promise<void>,
    s3Env?: Record<string, string>,
  ): Promise<ExtractionResult> => runToResult(request, { targets: { warehouse: targetUrl() }, ...(s3Env ? { s3Env } : {}) }, onEnd);

  it('deferrable keys hold at COMMIT, not per file: a self-referencing table split into ranges, and a cycle of two tables (DEFERRABLE INITIALLY IMMEDIATE)', async () => {
    // Each row's boss is in the other half of the key range, so each file references rows of the other; each cyc.a row's
    // b is loaded after it. Before, every file's COPY checked its keys at once and the loads failed with 23503.
    const ddl = (schema: string) => `CREATE SCHEMA ${schema};
      CREATE TABLE ${schema}.emp (id int PRIMARY KEY, boss int REFERENCES ${schema}.emp DEFERRABLE);
      CREATE TABLE ${schema}.a (id int PRIMARY KEY, b int);
      CREATE TABLE ${schema}.b (id int PRIMARY KEY, a int REFERENCES ${schema}.a DEFERRABLE);
      ALTER TABLE ${schema}.a ADD FOREIGN KEY (b) REFERENCES ${schema}.b DEFERRABLE`;
    await admin().query(`DROP SCHEMA IF EXISTS cyc CASCADE; ${ddl('cyc')};
      INSERT INTO cyc.emp SELECT g, NULL FROM generate_series(1, 4000) g; UPDATE cyc.emp SET boss = 4001 - id;
      INSERT INTO cyc.a SELECT g, NULL FROM generate_series(1, 100) g; INSERT INTO cyc.b SELECT g, g FROM generate_series(1, 100) g;
      UPDATE cyc.a SET b = id; ANALYZE cyc.emp`);
    await recreateTarget(ddl('dcyc'));
    const whole = await run({ table: 'cyc.emp', partitions: 2, target: { name: 'warehouse', table: 'dcyc.emp' } });
    assert.equal(whole.terminalReceipt.outcome, 'success', JSON.stringify(whole.load));
    assert.equal(whole.manifest.files.length, 2);
    const set = await run({ tables: ['cyc.a', 'cyc.b'], target: { name: 'warehouse', schema: 'dcyc', mode: 'replace' } });
    assert.equal(set.terminalReceipt.outcome, 'success', JSON.stringify(set.load));
    const loaded = await onTarget(
      async (c) =>
        (
          await c.query(
            'SELECT (SELECT count(*) FROM dcyc.emp WHERE boss = 4001 - id)::int AS emp, (SELECT count(*) FROM dcyc.a JOIN dcyc.b ON a.b = b.id AND b.a = a.id)::int AS pairs',
          )
        ).rows[0],
    );
    assert.deepEqual(loaded, { emp: 4000, pairs: 100 });
    await admin().query('DROP SCHEMA cyc CASCADE');
  });

  it("replace truncates each target table's own rows: an inheritance child outside the set keeps its rows", async () => {
    await onTarget((c) =>
      c.query(
        `INSERT INTO dst.parent VALUES (-5, 'stale'); CREATE TABLE dst.parent_archive () INHERITS (dst.parent); INSERT INTO dst.parent_archive VALUES (-1, 'archived')`,
      ),
    );
    const replaced = await run({ schema: 'sload', target: { name: 'warehouse', schema: 'dst', mode: 'replace' } });
    assert.equal(replaced.terminalReceipt.outcome, 'success', JSON.stringify(replaced.load));
    const counts = await onTarget(
      async (c) =>
        (await c.query('SELECT (SELECT count(*) FROM ONLY dst.parent)::int AS parents, (SELECT count(*) FROM dst.parent_archive)::int AS archived')).rows[0],
    );
    assert.deepEqual(counts, { parents: source.parents, archived: 1 });
  });

  it('replace into a view of the set empties it with a DELETE (TRUNCATE refuses a view), as a one-table replace does', async () => {
    await onTarget((c) =>
      c.query(`DROP TABLE dst.child; CREATE TABLE dst.child_rows (id bigint PRIMARY KEY, parent_id int NOT NULL, amount numeric(12,2));
               CREATE VIEW dst.child AS SELECT * FROM dst.child_rows; INSERT INTO dst.child_rows VALUES (-7, -7, 0)`),
    );
    const replaced = await run({ schema: 'sload', target: { name: 'warehouse', schema: 'dst', mode: 'replace' } });
    assert.equal(replaced.terminalReceipt.outcome, 'success', JSON.stringify(replaced.load));
    const counts = await onTarget(async (c) => (await c.query('SELECT count(*)::int AS n, min(id)::int AS first FROM dst.child_rows')).rows[0]);
    assert.deepEqual(counts, { n: source.children, first: 1 });
  });

  it('--target-schema: parent and child load in one transaction, the key holds, rows and sums equal the source; replace empties the set at once', async () => {
    const appended = await run({ schema: 'sload', target: { name: 'warehouse', schema: 'dst' } });
    assert.equal(appended.terminalReceipt.outcome, 'success', JSON.stringify(appended.load));
    assert.deepEqual(appended.load, { outcome: 'committed', reason: null, rows: 6200 });
    assert.deepEqual(await targetSums(), source);
    const fence = await onTarget((c) => c.query('SELECT operation_id, rows::int FROM pgextract.commit_fence'));
    assert.deepEqual(fence.rows, [{ operation_id: appended.operationId, rows: 6200 }], 'one fence row for the whole set');
    await admin().query('CREATE TABLE sload.empty (id int PRIMARY KEY)');
    await onTarget((c) => c.query('CREATE TABLE dst.empty (id int PRIMARY KEY); INSERT INTO dst.empty VALUES (1)'));
    try {
      const replaced = await run({ tables: ['sload.child', 'sload.parent', 'sload.empty'], target: { name: 'warehouse', schema: 'dst', mode: 'replace' } });
      assert.equal(replaced.terminalReceipt.outcome, 'success', JSON.stringify(replaced.load));
    } finally {
      await admin().query('DROP TABLE sload.empty');
    }
    assert.deepEqual(await targetSums(), source, 'replaced, not doubled');
    assert.equal(
      await onTarget(async (c) => (await c.query('SELECT count(*)::int AS n FROM dst.empty')).rows[0].n),
      0,
      'an empty source table empties its target',
    );
  });

  /** Loads a source table of four rows and no columns into dst.marks made by `targetDdl`, in csv and then binary. */
  const loadColumnless = async (targetDdl: string): Promise<void> => {
    await admin().query('CREATE TABLE sload.marks (); INSERT INTO sload.marks SELECT FROM generate_series(1, 4)');
    await onTarget((c) => c.query(targetDdl));
    try {
      for (const format of ['csv', 'binary'] as const) {
        const loaded = await run({ tables: ['sload.marks'], format, target: { name: 'warehouse', schema: 'dst' } });
        assert.equal(loaded.terminalReceipt.outcome, 'success', JSON.stringify(loaded.load));
      }
    } finally {
      await admin().query('DROP TABLE sload.marks');
    }
  };

  it('a table with no columns loads its row count into a target with none, in csv and binary', async () => {
    await loadColumnless('CREATE TABLE dst.marks ()');
    assert.equal(await onTarget(async (c) => (await c.query('SELECT count(*)::int AS n FROM dst.marks')).rows[0].n), 8, 'four rows, twice');
  });

  it("a table with no columns into a target with one: each row takes the column's default, as an INSERT of no column does (csv, binary)", async () => {
    // Before, the COPY into the target's columns read each empty line as a NULL.
    await loadColumnless(`CREATE TABLE dst.marks (note text DEFAULT 'filled')`);
    const notes = await onTarget(async (c) => (await c.query('SELECT note, count(*)::int AS n FROM dst.marks GROUP BY note')).rows);
    assert.deepEqual(notes, [{ note: 'filled', n: 8 }]);
  });

  it('a target whose BEFORE INSERT trigger routes each row to an inheritance child (returning NULL) loads every row there', async () => {
    // Before, COPY straight into the parent counted none of the routed rows: TARGET_CHECKSUM_MISMATCH blamed the files.
    await onTarget((c) =>
      c.query(`CREATE TABLE dst.parent_current () INHERITS (dst.parent);
        CREATE FUNCTION dst.route() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO dst.parent_current VALUES (NEW.*); RETURN NULL; END $$;
        CREATE TRIGGER route BEFORE INSERT ON dst.parent FOR EACH ROW EXECUTE FUNCTION dst.route()`),
    );
    const loaded = await run({ tables: ['sload.parent'], target: { name: 'warehouse', schema: 'dst' } });
    assert.equal(loaded.terminalReceipt.outcome, 'success', JSON.stringify(loaded.load));
    const counts = await onTarget(
      async (c) =>
        (await c.query('SELECT (SELECT count(*) FROM ONLY dst.parent)::int AS own, (SELECT count(*) FROM dst.parent_current)::int AS routed')).rows[0],
    );
    assert.deepEqual(counts, { own: 0, routed: source.parents });
  });

  it('identity and generated columns: a GENERATED ALWAYS identity keeps the copied ids and a generated column is computed by the target, loaded through files (csv, binary) and streamed', async () => {
    // tagged is staged (its generated column); numbered, an identity alone, is COPYed straight in.
    const ddl = (schema: string) =>
      `CREATE TABLE ${schema}.tagged (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, parent_id int NOT NULL, qty int, twice int GENERATED ALWAYS AS (qty * 2) STORED);
       CREATE TABLE ${schema}.numbered (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)`;
    await admin().query(
      `${ddl('sload')}; INSERT INTO sload.tagged (id, parent_id, qty) OVERRIDING SYSTEM VALUE SELECT 1000 + g * 7, 1 + g % 200, g FROM generate_series(1, 500) g;
       INSERT INTO sload.numbered OVERRIDING SYSTEM VALUE SELECT 10 * g, 'n' || g FROM generate_series(1, 50) g`,
    );
    const numbered = 'SELECT id, v FROM %s.numbered ORDER BY id';
    const expectedNumbered = (await admin().query(numbered.replace('%s', 'sload'))).rows;
    const rows = 'SELECT id, parent_id, qty, twice FROM %s.tagged ORDER BY id';
    const expected = (await admin().query(rows.replace('%s', 'sload'))).rows;
    await onTarget((c) => c.query(ddl('dst')));
    try {
      for (const format of ['csv', 'binary'] as const) {
        const loaded = await run({ tables: ['sload.tagged', 'sload.numbered'], format, target: { name: 'warehouse', schema: 'dst', mode: 'replace' } });
        assert.equal(loaded.terminalReceipt.outcome, 'success', JSON.stringify(loaded.load));
        assert.deepEqual(await onTarget(async (c) => (await c.query(rows.replace('%s', 'dst'))).rows), expected, format);
        assert.deepEqual(await onTarget(async (c) => (await c.query(numbered.replace('%s', 'dst'))).rows), expectedNumbered, `${format}: ids kept`);
      }
      const streamed = await run({ table: 'sload.tagged', partitions: 2, target: { name: 'warehouse', table: 'dst.tagged', mode: 'replace', via: 'stream' } });
      assert.equal(streamed.terminalReceipt.outcome, 'success', JSON.stringify(streamed.load));
      assert.deepEqual(await onTarget(async (c) => (await c.query(rows.replace('%s', 'dst'))).rows), expected, 'streamed');
    } finally {
      await admin().query('DROP TABLE sload.tagged, sload.numbered');
    }
  });

  it("a serial or identity column's sequence moves past the loaded rows (files of a set, of one table, stream, into a partition), descending ones below them, and one already ahead stays", async () => {
    const ddl = (schema: string, ahead = '') =>
      `CREATE TABLE ${schema}.serials (id bigserial PRIMARY KEY, v text);
       CREATE TABLE ${schema}.falling (id int GENERATED BY DEFAULT AS IDENTITY (INCREMENT BY -1 MAXVALUE -1 START WITH -1), v text);
       CREATE TABLE ${schema}.ahead (id int GENERATED ALWAYS AS IDENTITY ${ahead}, v text);
       CREATE TABLE ${schema}.scaled (id bigint, v text); CREATE SEQUENCE ${schema}.scaled_seq OWNED BY ${schema}.scaled.id;
       ALTER TABLE ${schema}.scaled ALTER id SET DEFAULT nextval('${schema}.scaled_seq') * 1000`;
    await admin().query(
      `${ddl('sload')}; INSERT INTO sload.serials SELECT 3 * g, 's' || g FROM generate_series(1, 400) g;
       INSERT INTO sload.falling SELECT -5 * g, 'f' || g FROM generate_series(1, 30) g;
       INSERT INTO sload.ahead OVERRIDING SYSTEM VALUE SELECT g, 'a' || g FROM generate_series(1, 20) g;
       INSERT INTO sload.scaled SELECT g * 1000, 's' || g FROM generate_series(1, 20) g`,
    );
    const nextIds = () =>
      onTarget(async (c) => {
        const next = async (table: string) => (await c.query(`INSERT INTO dst.${table} (v) VALUES ('new') RETURNING id`)).rows[0].id;
        return [await next('serials'), await next('falling'), await next('ahead')];
      });
    // A partition of a table whose default draws from the parent's sequence (the partition owns none).
    const partitioned = `DROP TABLE dst.serials; CREATE TABLE dst.serials (id bigserial, v text) PARTITION BY RANGE (id);
      CREATE TABLE dst.serials_all PARTITION OF dst.serials FOR VALUES FROM (MINVALUE) TO (MAXVALUE)`;
    try {
      for (const [request, serials = ''] of [
        [{ tables: ['sload.serials', 'sload.falling', 'sload.ahead', 'sload.scaled'], target: { name: 'warehouse', schema: 'dst', mode: 'replace' } }],
        [{ table: 'sload.serials', format: 'binary', partitions: 2, target: { name: 'warehouse', table: 'dst.serials', mode: 'replace' } }],
        [{ table: 'sload.serials', partitions: 2, target: { name: 'warehouse', table: 'dst.serials', mode: 'replace', via: 'stream' } }],
        [{ table: 'sload.serials', target: { name: 'warehouse', table: 'dst.serials_all', mode: 'append' } }, partitioned],
      ] satisfies [Omit<ExtractionRequest, 'source'>, string?][]) {
        await onTarget((c) => c.query(`DROP TABLE IF EXISTS dst.serials, dst.falling, dst.ahead, dst.scaled; ${ddl('dst', '(START WITH 5000)')}; ${serials}`));
        const loaded = await run(request);
        assert.equal(loaded.terminalReceipt.outcome, 'success', JSON.stringify(loaded.load));
        const [serial, falling, ahead] = await nextIds();
        assert.equal(serial, '1201', `${JSON.stringify(request)}: after the highest id loaded, 1200`);
        if (request.tables) {
          assert.deepEqual([falling, ahead], [-151, 5000], 'below the lowest id loaded, -150; a sequence already past the rows stays');
          const scaled = await onTarget(async (c) => (await c.query('SELECT last_value::int, is_called FROM dst.scaled_seq')).rows[0]);
          assert.deepEqual(
            scaled,
            { last_value: 1, is_called: false },
            'a default that computes with its sequence (× 1000) leaves it: its values are not its own',
          );
        }
      }
    } finally {
      await admin().query('DROP TABLE sload.serials, sload.falling, sload.ahead, sload.scaled');
    }
  });

  it('target columns in another order, and ones the source lacks: each field loads into the column of its name (files, binary, a set from S3, stream), the others take their default and identity; a column the target lacks aborts naming it', async () => {
    await admin().query(
      `CREATE TABLE sload.people (id int PRIMARY KEY, first_name text, last_name text); INSERT INTO sload.people SELECT g, 'first ' || g, 'last ' || g FROM generate_series(1, 300) g`,
    );
    // serial_no is the target's own (an identity the source lacks): filled by the target on every path, staged or not.
    await onTarget((c) =>
      c.query(
        `CREATE TABLE dst.people (last_name text, note text DEFAULT 'copied', id int PRIMARY KEY, serial_no bigint GENERATED ALWAYS AS IDENTITY, first_name text)`,
      ),
    );
    const people = (schema: string, note = '') => `SELECT id, first_name, last_name${note} FROM ${schema}.people ORDER BY id`;
    const expected = (await admin().query(people('sload', `, 'copied' AS note`))).rows;
    try {
      const s3 = await s3Service();
      await s3.createBucket('pgx-set-load');
      for (const request of [
        { tables: ['sload.people'], target: { name: 'warehouse', schema: 'dst', mode: 'replace' } },
        { tables: ['sload.people'], format: 'binary', target: { name: 'warehouse', schema: 'dst', mode: 'replace' } },
        // The loader reads the set's columns from its data package, here in the bucket.
        { tables: ['sload.people'], outDir: 's3://pgx-set-load/runs', target: { name: 'warehouse', schema: 'dst', mode: 'replace' } },
        { table: 'sload.people', partitions: 2, target: { name: 'warehouse', table: 'dst.people', mode: 'replace' } },
        { table: 'sload.people', partitions: 2, target: { name: 'warehouse', table: 'dst.people', mode: 'replace', via: 'stream' } },
      ] satisfies Omit<ExtractionRequest, 'source'>[]) {
        const loaded = await run(request, undefined, s3.env);
        assert.equal(loaded.terminalReceipt.outcome, 'success', JSON.stringify(loaded.load));
        assert.deepEqual(await onTarget(async (c) => (await c.query(people('dst', ', note'))).rows), expected, JSON.stringify(request));
        assert.equal(await onTarget(async (c) => (await c.query('SELECT count(serial_no)::int AS n FROM dst.people')).rows[0].n), 300);
      }
      await onTarget((c) => c.query('ALTER TABLE dst.people DROP COLUMN first_name'));
      const refused = await run({ tables: ['sload.people'], target: { name: 'warehouse', schema: 'dst' } });
      assert.deepEqual([refused.terminalReceipt.outcome, refused.load?.reason], ['abort', 'SQLSTATE_42703'], 'column "first_name" does not exist');
    } finally {
      await admin().query('DROP TABLE sload.people');
    }
  });

  it('binary files load only into columns of the source types: other types abort with TARGET_TYPE_MISMATCH naming each column before anything loads (set, one table, stream); an enum of another schema, a domain, other typmods and varchar into text load exactly', async () => {
    // Binary COPY checks no type: before the check, bigint into double precision loaded 1000 as 4.94e-321, with outcome success.
    await admin().query(`CREATE TYPE sload.mood AS ENUM ('calm', 'busy');
      CREATE TABLE sload.typed (id int PRIMARY KEY, amount bigint, at timestamp, mood sload.mood, code varchar(8), price numeric(12,2));
      INSERT INTO sload.typed SELECT g, g * 1000, timestamp '2026-01-01' + g * interval '1 hour', (ARRAY['calm', 'busy'])[1 + g % 2]::sload.mood, 'c' || g, g * 0.25 FROM generate_series(1, 500) g`);
    const rows = (schema: string) => `SELECT id::int, amount::text, at::text, mood::text, code::text, price::text FROM ${schema}.typed ORDER BY id`;
    const expected = (await admin().query(rows('sload'))).rows;
    const requests = (mode: 'append' | 'replace') =>
      [
        { tables: ['sload.typed'], format: 'binary', target: { name: 'warehouse', schema: 'dst', mode } },
        { table: 'sload.typed', partitions: 2, format: 'binary', target: { name: 'warehouse', table: 'dst.typed', mode } },
        { table: 'sload.typed', partitions: 2, format: 'binary', target: { name: 'warehouse', table: 'dst.typed', mode, via: 'stream' } },
      ] satisfies Omit<ExtractionRequest, 'source'>[];
    const activities = ['loadTargetSet', 'loadTarget', 'loadStream'];
    try {
      await onTarget((c) =>
        c.query(`CREATE TYPE dst.mood AS ENUM ('calm', 'busy'); CREATE DOMAIN dst.positive AS int CHECK (VALUE > 0);
          CREATE TABLE dst.typed (id dst.positive PRIMARY KEY, amount bigint, at timestamp(0), mood dst.mood, code text, price numeric(14,3))`),
      );
      for (const request of requests('replace')) {
        const loaded = await run(request);
        assert.equal(loaded.terminalReceipt.outcome, 'success', JSON.stringify(loaded.load));
        const got = await onTarget(async (c) => (await c.query(rows('dst'))).rows);
        assert.deepEqual(
          got.map((r) => ({ ...r, price: Number(r.price).toFixed(2) })),
          expected,
          JSON.stringify(request),
        );
      }
      // mood: the source's enum type is one the target lacks (no schema sload there), so text cannot be told to read it.
      await onTarget((c) =>
        c.query(`TRUNCATE dst.typed; ALTER TABLE dst.typed ALTER amount TYPE double precision, ALTER at TYPE timestamptz, ALTER mood TYPE text`),
      );
      for (const [i, request] of requests('append').entries()) {
        const refused = await run(request, async (handle) => assert.equal(await lastAttempt(handle, activities[i]!), 1, 'a definite failure is not retried'));
        assert.deepEqual([refused.terminalReceipt.outcome, refused.load?.reason], ['abort', 'TARGET_TYPE_MISMATCH'], JSON.stringify(request));
        assert.match(
          refused.load?.message ?? '',
          /^binary files cannot load into dst\.typed \(amount is bigint in the files and double precision there; at is timestamp without time zone in the files and timestamp with time zone there; mood is sload\.mood in the files, a type the target lacks\)/,
        );
        assert.equal(await onTarget(async (c) => (await c.query('SELECT count(*)::int AS n FROM dst.typed')).rows[0].n), 0);
      }
      // The same files in CSV load: the target reads each value's text as its own type.
      const csv = await run({ tables: ['sload.typed'], target: { name: 'warehouse', schema: 'dst' } });
      assert.equal(csv.terminalReceipt.outcome, 'success', JSON.stringify(csv.load));
      const amounts = await onTarget(async (c) => (await c.query('SELECT sum(amount)::text AS s FROM dst.typed')).rows[0].s);
      assert.equal(amounts, String((1000 * (500 * 501)) / 2));
    } finally {
      await admin().query('DROP TABLE sload.typed; DROP TYPE sload.mood');
    }
  });

  it("binary files of object references (regclass, regtype[]) are refused with TARGET_TYPE_MISMATCH (their values are the source database's oids); csv loads them by name", async () => {
    // Before the check, a binary load wrote the source's oids into the target, where they name other objects or none.
    await admin().query(`CREATE TABLE sload.refs (id int PRIMARY KEY, rel regclass, types regtype[]);
      INSERT INTO sload.refs VALUES (1, 'pg_catalog.pg_class', '{integer,text}'), (2, 'sload.parent', '{sload.refs}')`);
    try {
      await onTarget((c) => c.query(`CREATE TABLE dst.refs (id int PRIMARY KEY, rel regclass, types regtype[])`));
      for (const request of [
        { tables: ['sload.refs'], format: 'binary', target: { name: 'warehouse', schema: 'dst' } },
        { table: 'sload.refs', format: 'binary', target: { name: 'warehouse', table: 'dst.refs', via: 'stream' } },
      ] satisfies Omit<ExtractionRequest, 'source'>[]) {
        const refused = await run(request);
        assert.deepEqual([refused.terminalReceipt.outcome, refused.load?.reason], ['abort', 'TARGET_TYPE_MISMATCH'], JSON.stringify(request));
        assert.match(
          refused.load?.message ?? '',
          /^binary files cannot load into dst\.refs \(rel is regclass, whose binary values are the source database's object ids; types is regtype\[\], whose/,
        );
      }
      // By name: the target has no schema sload, which CSV says rather than load another table's oid.
      // Not retried: the rows name a schema the target lacks, which no retry makes (five tries took 15 s of backoff).
      const named = await run({ tables: ['sload.refs'], target: { name: 'warehouse', schema: 'dst' } }, async (handle) =>
        assert.equal(await lastAttempt(handle, 'loadTargetSet'), 1, 'a definite failure is not retried'),
      );
      assert.deepEqual([named.terminalReceipt.outcome, named.load?.reason], ['abort', 'SQLSTATE_3F000']);
      await admin().query(`DELETE FROM sload.refs WHERE id = 2`);
      const loaded = await run({ tables: ['sload.refs'], target: { name: 'warehouse', schema: 'dst' } });
      assert.equal(loaded.terminalReceipt.outcome, 'success', JSON.stringify(loaded.load));
      assert.deepEqual(await onTarget(async (c) => (await c.query('SELECT rel::text, types::text FROM dst.refs')).rows), [
        { rel: 'pg_class', types: '{integer,text}' },
      ]);
    } finally {
      await admin().query('DROP TABLE sload.refs');
      await onTarget((c) => c.query('DROP TABLE dst.refs'));
    }
  });

  it('a failure in the second table rolls back the first: abort, both target tables empty, no staging', async () => {
    await onTarget((c) =>
      c.query(
        'CREATE TABLE dst.kid (LIKE dst.child INCLUDING ALL, CHECK (amount < 1000)); ALTER TABLE dst.kid ADD FOREIGN KEY (parent_id) REFERENCES dst.parent',
      ),
    );
    const result = await run({
      tables: ['sload.parent', 'sload.child'],
      target: { name: 'warehouse', tables: { 'sload.parent': 'dst.parent', 'sload.child': 'dst.kid' } },
    });
    assert.equal(result.terminalReceipt.outcome, 'abort');
    const { message, ...load } = result.load!;
    assert.deepEqual(load, { outcome: 'failed', reason: 'SQLSTATE_23514', rows: null });
    assert.equal(message, 'dst.kid: new row for relation "kid" violates check constraint "kid_amount_check"');
    const counts = await onTarget(
      async (c) => (await c.query('SELECT (SELECT count(*) FROM dst.parent)::int AS parents, (SELECT count(*) FROM dst.kid)::int AS kids')).rows[0],
    );
    assert.deepEqual(counts, { parents: 0, kids: 0 });
  });

  it("a server error names the set's table it met: a unique key's name, a value the column rejects (before, neither said which table)", async () => {
    await onTarget((c) => c.query(`INSERT INTO dst.parent VALUES (7, 'there')`));
    const duplicate = await run({ schema: 'sload', target: { name: 'warehouse', schema: 'dst' } });
    assert.deepEqual([duplicate.terminalReceipt.outcome, duplicate.load?.reason], ['abort', 'SQLSTATE_23505']);
    assert.equal(duplicate.load?.message, 'dst.parent: duplicate key value violates unique constraint "parent_pkey"');
    await onTarget((c) => c.query('DELETE FROM dst.parent; ALTER TABLE dst.child ALTER amount TYPE int'));
    const rejected = await run({ schema: 'sload', target: { name: 'warehouse', schema: 'dst' } });
    assert.deepEqual([rejected.terminalReceipt.outcome, rejected.load?.reason], ['abort', 'SQLSTATE_22P02']);
    assert.match(rejected.load?.message ?? '', /^dst\.child: invalid input syntax for type integer: "[0-9.]+"$/);
    assert.deepEqual(await targetSums(), { parents: 0, children: 0, total: null });
  });

  it('replace on a target table another table references: abort with SQLSTATE_0A000 after one attempt, naming both tables; target untouched', async () => {
    await onTarget((c) => c.query('CREATE TABLE dst.other (parent_id int REFERENCES dst.parent)'));
    const result = await run({ schema: 'sload', target: { name: 'warehouse', schema: 'dst', mode: 'replace' } }, async (handle) =>
      assert.equal(await lastAttempt(handle, 'loadTargetSet'), 1, 'a definite failure is not retried'),
    );
    assert.deepEqual([result.terminalReceipt.outcome, result.load?.reason], ['abort', 'SQLSTATE_0A000']);
    assert.equal(result.load?.message, 'cannot truncate a table referenced in a foreign key constraint: Table "other" references "parent".');
    assert.deepEqual(await targetSums(), { parents: 0, children: 0, total: null });
  });

  it('a mapped target table that does not exist: abort with TABLE_NOT_FOUND, nothing loaded', async () => {
    const result = await run({
      tables: ['sload.parent', 'sload.child'],
      target: { name: 'warehouse', tables: { 'sload.parent': 'dst.parent', 'sload.child': 'dst.nope' } },
    });
    assert.equal(result.terminalReceipt.outcome, 'abort');
    assert.equal(result.load?.reason, 'TABLE_NOT_FOUND');
    assert.deepEqual(await targetSums(), { parents: 0, children: 0, total: null });
  });

  // Two listed tables of one name under target.schema are refused before the run (below).
  it('a schema run whose explicit map leaves a table out: abort with TARGET_MAPPING_INVALID, nothing loaded', async () => {
    const left = await run({ schema: 'sload', target: { name: 'warehouse', tables: { 'sload.parent': 'dst.parent' } } });
    assert.deepEqual([left.terminalReceipt.outcome, left.load?.reason], ['abort', 'TARGET_MAPPING_INVALID']);
    assert.deepEqual(await targetSums(), { parents: 0, children: 0, total: null });
  });

  const refused: [string, ExtractionRequest, RegExp][] = [
    ['no mapping', { tables: ['sload.parent'], target: { name: 'warehouse' } }, /TARGET_MAPPING_INVALID/],
    ['target.table for a set', { schema: 'sload', target: { name: 'warehouse', table: 'dst.parent' } }, /TARGET_MAPPING_INVALID/],
    [
      'a listed table left out of the map',
      { tables: ['sload.parent', 'sload.child'], target: { name: 'warehouse', tables: { 'sload.parent': 'dst.parent' } } },
      /TARGET_MAPPING_INVALID/,
    ],
    [
      'two tables onto one',
      { tables: ['sload.parent', 'sload.child'], target: { name: 'warehouse', tables: { 'sload.parent': 'dst.x', 'sload.child': 'DST.x' } } },
      /TARGET_MAPPING_INVALID/,
    ],
    // Manifests name a table schema.table, so the table of "a.b".orders would read as "b.orders" in dst.
    [
      'a listed table whose schema has a dot, mapped by target.schema',
      { tables: ['"a.b".orders', 'sload.parent'], target: { name: 'warehouse', schema: 'dst' } },
      /TARGET_MAPPING_INVALID/,
    ],
    [
      'two listed tables of one name in different schemas, mapped by target.schema',
      { tables: ['sload.parent', 'public.parent'], target: { name: 'warehouse', schema: 'dst' } },
      /TARGET_MAPPING_INVALID/,
    ],
    ['a schema with a dot, mapped by target.schema', { schema: '"a.b"', target: { name: 'warehouse', schema: 'dst' } }, /TARGET_MAPPING_INVALID/],
    // Before, the first key that read as a.b.c took the run's table: a."b.c" loaded into dst.wrong.
    [
      'two map keys that read alike in a manifest',
      { tables: ['a."b.c"'], target: { name: 'warehouse', tables: { '"a.b".c': 'dst.wrong', 'a."b.c"': 'dst.right' } } },
      /TARGET_MAPPING_INVALID/,
    ],
    [
      'a key that only reads alike joined with the listed table',
      { tables: ['a."b.c"'], target: { name: 'warehouse', tables: { '"a.b".c': 'dst.wrong' } } },
      /TARGET_MAPPING_INVALID/,
    ],
    ['a key outside the schema the run reads', { schema: 'a', target: { name: 'warehouse', tables: { '"a.b".c': 'dst.wrong' } } }, /TARGET_MAPPING_INVALID/],
    [
      'one source mapped twice',
      {
        tables: ['public.parent', 'sload.parent'],
        target: { name: 'warehouse', tables: { parent: 'dst.a', 'public.parent': 'dst.b', 'sload.parent': 'dst.c' } },
      },
      /TARGET_MAPPING_INVALID/,
    ],
    ['--via stream', { schema: 'sload', target: { name: 'warehouse', schema: 'dst', via: 'stream' } }, /TARGET_VIA_UNSUPPORTED/],
    ['--via internal', { schema: 'sload', target: { name: 'warehouse', schema: 'dst', via: 'internal' } }, /TARGET_VIA_UNSUPPORTED/],
  ];
  for (const [what, request, code] of refused) {
    it(`refused before the run starts: ${what} (${code.source})`, async () => {
      await assert.rejects(startExtraction(live().temporal.client, request, { taskQueue: 'nobody-polls' }), (err: Error) =>
        code.test(`${(err as { code?: string }).code}`),
      );
    });
  }

  it('a schema with a dot maps by target.tables', () => {
    const input = parseExtractionInput({
      tables: ['"a.b".orders', 'sload.parent'],
      target: { name: 'warehouse', tables: { '"a.b".orders': 'dst.orders', 'sload.parent': 'dst.parent' } },
    });
    assert.deepEqual(targetTableOf(input.target!, 'a.b.orders'), { schema: 'dst', table: 'orders' });
  });

  it("a mapping with keys that read alike, or name a table the run does not read, is refused only for a new run: a running run's steps parse its input as an earlier version accepted it", () => {
    for (const tables of [
      { '"a.b".c': 'dst.wrong', 'a."b.c"': 'dst.right' },
      { 'a."b.c"': 'dst.right', 'other.x': 'dst.x' },
    ]) {
      const request = { tables: ['a."b.c"'], target: { name: 'warehouse', tables } };
      assert.doesNotThrow(() => parseExtractionInput(request));
      assert.throws(() => parseNewRunInput(request), { code: 'TARGET_MAPPING_INVALID' });
    }
  });

  it('two targets that read alike joined ("x.y".z and x."y.z") are two tables', () => {
    const input = parseExtractionInput({
      tables: ['sload.parent', 'sload.child'],
      target: { name: 'warehouse', tables: { 'sload.parent': '"x.y".z', 'sload.child': 'x."y.z"' } },
    });
    assert.deepEqual(targetTableOf(input.target!, 'sload.child'), { schema: 'x', table: 'y.z' });
  });

  it('CLI: start --tables --target --target-schema --wait --json loads the set; a set without --target-schema, or --target-schema without --target, exits 2', async () => {
    const bare = await cli(['start', '--schema', 'sload', '--target', 'warehouse'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(bare.code, 2, bare.stderr);
    assert.match(bare.stderr, /TARGET_MAPPING_INVALID/);
    const lone = await cli(['start', '--schema', 'sload', '--target-schema', 'dst'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    assert.equal(lone.code, 2, lone.stderr);
    assert.match(lone.stderr, /--target-schema needs --target/);
    const stream = await cli(['start', '--schema', 'sload', '--target', 'warehouse', '--target-schema', 'dst', '--via', 'stream'], {
      TEMPORAL_ADDRESS: '127.0.0.1:1',
    });
    assert.match(stream.stderr, /TARGET_VIA_UNSUPPORTED/);
    await withWorker(
      async ({ taskQueue }) => {
        const env = liveCliEnv(taskQueue);
        const doc = await cliJson(
          ['start', '--tables', 'sload.parent,sload.child', '--target', 'warehouse', '--target-schema', 'dst', '--mode', 'replace', '--wait', '--json'],
          env,
        );
        assert.deepEqual(doc.tables.map((t: { table: string }) => t.table).sort(), ['sload.child', 'sload.parent']);
        // With a built-in target, --wait returns once the load has ended, and says how it ended.
        assert.equal(doc.load.outcome, 'committed', JSON.stringify(doc.load));
        assert.equal(doc.terminalReceipt.outcome, 'success');
        assert.deepEqual(await targetSums(), source, 'loaded when the command returns');
      },
      { targets: { warehouse: targetUrl() } },
    );
    assert.deepEqual(await targetSums(), source);
  });
});

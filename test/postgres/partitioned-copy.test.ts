/**
 * Partitioned COPY against real PostgreSQL: one exported snapshot, bounds resolved inside it,
 * partitions on distinct sessions that all import it (dpone's live scenarios, and past them).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Client } from 'pg';
import type { KeyRange } from '../../src/contract/partition-range';
import { ErrorCode } from '../../src/errors';
import { copyPartition } from '../../src/postgres/partition-copy';
import { closeSession, openSession } from '../../src/postgres/session';
import { type ExportOptions, SnapshotCoordinator } from '../../src/postgres/snapshot-coordinator';
import { admin, filesDigest, nonBytewiseCollation, settleSessions, tableDigest } from '../support/database';
import { LocalFileSink } from '../../src/storage/local-file-sink';
import { eventually } from '../support/eventually';
import { live } from '../support/services';

const csv = { format: 'csv' as const, header: true, gzip: false };

/** Exports a snapshot of schema.t (split by `key` when given), lets `between` run, copies every partition on its own session. */
async function exportPartitions(
  schema: string,
  planning: ExportOptions,
  between: (c: SnapshotCoordinator) => Promise<void> = async () => undefined,
  key?: string,
) {
  const coordinatorClient = await openSession(live().pg.url, 'coordinator');
  const readers: Client[] = [];
  try {
    const coordinator = await SnapshotCoordinator.export(coordinatorClient, { schema, table: 't', key }, planning);
    const { plan } = coordinator;
    await between(coordinator);
    const expected = await tableDigest(`SELECT * FROM ${schema}.t`, plan.snapshotId);
    const paths = plan.ranges.map((_, i) => join(live().outRoot, `${schema}-part-${i}.csv`));
    const parts = await Promise.all(
      plan.ranges.map(async (range, i) => {
        const client = await openSession(live().pg.url, 'partition');
        readers.push(client);
        const columns = plan.table.columns.map((c) => c.name);
        return copyPartition(
          client,
          { snapshotId: plan.snapshotId, table: { schema, table: 't', columns }, key: plan.table.key, range, format: csv },
          new LocalFileSink(paths[i]!, 0o600),
        );
      }),
    );
    const receipt = await coordinator.complete(parts.map((p, i) => ({ name: `part-${i}`, rows: p.rows, bytes: p.bytes, sha256: p.sha256 })));
    return { plan, parts, paths, receipt, expected, actual: await filesDigest(`${schema}.t`, paths) };
  } finally {
    await Promise.all([coordinatorClient, ...readers].map(closeSession));
  }
}

/** `count` partitions, each within 2× of the mean, together exactly the table. */
function assertBalanced(run: Awaited<ReturnType<typeof exportPartitions>>, count: number): void {
  const rows = run.parts.map((p) => p.rows);
  const mean = rows.reduce((a, b) => a + b, 0) / rows.length;
  assert.equal(rows.length, count);
  assert.ok(
    rows.every((r) => r <= 2 * mean && r >= mean / 2),
    `balanced: ${rows.join(', ')}`,
  );
  assert.deepEqual(run.actual, run.expected);
}

async function fourRows(schema: string): Promise<void> {
  await admin().query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.t (id int PRIMARY KEY, v text)`);
  await admin().query(`INSERT INTO ${schema}.t VALUES (1,'old'),(2,'two'),(3,'three'),(4,'four')`);
}

describe('partitioned COPY over one exported snapshot (live PostgreSQL)', () => {
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('partitions run on distinct sessions, each importing the one snapshot; mutations after the export are absent', async () => {
    await fourRows('pw');
    const original = await tableDigest('SELECT * FROM pw.t');
    const run = await exportPartitions('pw', { partitions: 2 }, async () => {
      await admin().query(`UPDATE pw.t SET v = 'new' WHERE id = 1; INSERT INTO pw.t VALUES (5, 'five')`);
    });
    assert.equal(run.parts.length, 2);
    assert.deepEqual(run.actual, original, 'files hold exactly the 4 original rows');
    assert.deepEqual(run.expected, original, 'the exported snapshot is the original table');
    const pids = run.parts.map((p) => p.backendPid);
    assert.equal(new Set(pids).size, 2, 'distinct partition sessions');
    assert.ok(!pids.includes(run.plan.coordinatorPid), 'no partition ran on the coordinator');
    assert.ok(
      run.parts.every((p) => p.snapshotText === run.plan.snapshotText),
      'every partition saw the coordinator snapshot',
    );
    assert.equal(run.receipt.snapshotAuthority, 'postgresql.exported_snapshot');
    assert.ok(run.receipt.extractionCompletedAt !== null && run.receipt.sourceToken !== null);
    assert.equal((await admin().query('SELECT count(*)::int AS n FROM pw.t')).rows[0].n, 5);
  });

  it('automatic bounds are resolved inside the snapshot: a row inserted beyond MAX after planning is absent', async () => {
    await fourRows('pab');
    const original = await tableDigest('SELECT * FROM pab.t');
    const run = await exportPartitions('pab', { partitions: 'auto', targetRowsPerPartition: 2, maxPartitions: 4 }, async () => {
      await admin().query(`INSERT INTO pab.t VALUES (6, 'six')`);
    });
    assert.equal(run.plan.rowCount, 4);
    assert.equal(run.parts.length, 2);
    assert.deepEqual(run.actual, original);
    assert.equal(
      run.parts.reduce((n, p) => n + p.rows, 0),
      4,
    );
  });

  it('NULL keys are exported exactly once, in their own partition', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS pn CASCADE; CREATE SCHEMA pn; CREATE TABLE pn.t (k int, v text)`);
    await admin().query(`INSERT INTO pn.t SELECT CASE WHEN g % 10 = 0 THEN NULL ELSE g END, 'v' || g FROM generate_series(1, 1000) g`);
    const coordinatorClient = await openSession(live().pg.url, 'coordinator');
    try {
      const c = await SnapshotCoordinator.export(coordinatorClient, { schema: 'pn', table: 't', key: 'k' }, { partitions: 4 });
      assert.deepEqual(c.plan.ranges.at(-1), { kind: 'nulls' });
      await c.abort();
    } finally {
      await closeSession(coordinatorClient);
    }
    const run = await exportPartitionsWithKey('pn', 'k', 4);
    assert.deepEqual(run.actual, await tableDigest('SELECT * FROM pn.t'));
    assert.equal(run.parts.at(-1)!.rows, 100);
  });

  it('an empty table gives one empty, receipted partition', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS pe CASCADE; CREATE SCHEMA pe; CREATE TABLE pe.t (id int PRIMARY KEY)`);
    const run = await exportPartitions('pe', { partitions: 4 });
    assert.deepEqual(run.plan.ranges, [{ kind: 'all' }]);
    assert.equal(run.parts[0]!.rows, 0);
    assert.equal(run.receipt.evidence[0]!.rows, 0);
    assert.ok(run.receipt.extractionCompletedAt);
  });

  it('a skewed key gives partitions within 2× of the mean (quantile boundaries)', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS ps CASCADE; CREATE SCHEMA ps; CREATE TABLE ps.t (id bigint PRIMARY KEY)`);
    // 90% of the rows in the first 1% of the key space.
    await admin().query(`INSERT INTO ps.t SELECT g FROM generate_series(1, 9000) g UNION ALL SELECT 9000 + g * 100 FROM generate_series(1, 1000) g`);
    assertBalanced(await exportPartitions('ps', { partitions: 4 }), 4);
  });

  for (const analyzed of [true, false]) {
    it(`a skewed key on a large table still gives partitions within 2× of the mean (cuts from ${analyzed ? 'its histogram' : 'a page sample'})`, async () => {
      await admin().query(`DROP SCHEMA IF EXISTS pss CASCADE; CREATE SCHEMA pss; CREATE TABLE pss.t (id bigint PRIMARY KEY) WITH (autovacuum_enabled = false)`);
      // 1.5 M rows, 90% of them in the first 1% of the key space: more than a 150 000-row sample takes.
      await admin().query(`INSERT INTO pss.t SELECT g FROM generate_series(1, 1350000) g UNION ALL SELECT 1350000 + g * 900 FROM generate_series(1, 150000) g`);
      if (analyzed) await admin().query('ANALYZE pss.t');
      assertBalanced(await exportPartitions('pss', { partitions: 8 }), 8);
      await admin().query('DROP SCHEMA pss CASCADE');
    });
  }

  /** A column's histogram bounds from ANALYZE (empty when it has none). */
  const histogram = async (relation: string, column = 'id'): Promise<string[]> =>
    (
      await admin().query<{ b: string[] | null }>(
        `SELECT histogram_bounds::text::text[] AS b FROM pg_stats WHERE schemaname || '.' || tablename = $1 AND attname = $2`,
        [relation, column],
      )
    ).rows[0]?.b ?? [];

  /** Rows that scans of `relation` returned in `client`'s open transaction (planning's reads: samples, or a COUNT(*) reading them all). */
  const rowsRead = async (client: Client, relation: string): Promise<number> =>
    Number((await client.query<{ n: string }>(`SELECT pg_stat_get_xact_tuples_returned($1::regclass)::text AS n`, [relation])).rows[0]!.n);

  /**
   * Runs `sql` and has its session report the rows it changed now, then waits until the statistics show at least
   * `modified` for `relation`: a later ANALYZE then starts the count afresh (reported after it, the table looks changed since).
   */
  const changeAndReport = async (sql: string, modified: number, relation = 'pfl.t'): Promise<void> => {
    await admin().query(`${sql}; SELECT pg_stat_force_next_flush()`);
    const seen = async () =>
      Number(
        (await admin().query<{ n: string }>(`SELECT n_mod_since_analyze::text AS n FROM pg_stat_all_tables WHERE relid = $1::regclass`, [relation])).rows[0]!.n,
      );
    await eventually(async () => (await seen()) >= modified, `n_mod_since_analyze ≥ ${modified}`);
  };

  /**
   * Where `auto` takes the split points of a 1.5 M-row table from: its histogram while the statistics
   * are fresh, else a page sample, which spreads the cuts over the keys as they are now.
   */
  const cases = {
    fresh: { how: 'from its statistics, reading no rows', rows: 1_500_000, from: 'histogram' },
    none: { how: 'from a page sample (no statistics yet)', rows: 1_500_000, from: 'sample' },
    grown: { how: 'from a page sample once the table doubled since ANALYZE', rows: 3_000_000, from: 'sample' },
    deleted: { how: 'from a page sample once a fifth of its rows were deleted since ANALYZE', rows: 1_200_000, from: 'sample' },
    refused: { how: 'from a page sample when the statistics views are refused to the role', rows: 1_500_000, from: 'sample' },
    coarse: { how: 'from a page sample when its histogram has fewer buckets than partitions', rows: 1_500_000, from: 'sample' },
  } as const;
  for (const [name, { how, rows, from }] of Object.entries(cases)) {
    it(`auto partitioning plans a large table ${how}: no COUNT(*), no more than a fraction of its rows read`, async () => {
      await admin().query(
        `DROP SCHEMA IF EXISTS pfl CASCADE; CREATE SCHEMA pfl; CREATE TABLE pfl.t (id bigint PRIMARY KEY, pad text) WITH (autovacuum_enabled = false)`,
      );
      // The insert's own counts reach the statistics before ANALYZE resets them, or the table would look changed since.
      await changeAndReport(`INSERT INTO pfl.t SELECT g, 'row ' || g FROM generate_series(1, 1500000) g`, 1_500_000);
      // Four buckets for auto's six partitions.
      if (name === 'coarse') await admin().query('ALTER TABLE pfl.t ALTER COLUMN id SET STATISTICS 4');
      if (name !== 'none') await admin().query('ANALYZE pfl.t');
      // Every new key above the histogram's last bound; every deleted one at the top of it.
      if (name === 'grown') await admin().query(`INSERT INTO pfl.t SELECT g, 'row ' || g FROM generate_series(1500001, 3000000) g`);
      if (name === 'deleted') await changeAndReport('DELETE FROM pfl.t WHERE id > 1200000', 300_000);
      const bounds = new Set(await histogram('pfl.t'));
      let url = live().pg.url;
      if (name === 'refused') {
        await admin().query(`CREATE ROLE pgx_planner LOGIN; GRANT USAGE ON SCHEMA pfl TO pgx_planner; GRANT SELECT ON pfl.t TO pgx_planner`);
        await admin().query('REVOKE SELECT ON pg_catalog.pg_stat_all_tables FROM PUBLIC');
        const asPlanner = new URL(url);
        asPlanner.username = 'pgx_planner';
        url = asPlanner.toString();
      }
      const client = await openSession(url, 'coordinator');
      try {
        const c = await SnapshotCoordinator.export(client, { schema: 'pfl', table: 't' }, { partitions: 'auto' });
        const read = await rowsRead(client, 'pfl.t');
        assert.ok(read < (from === 'histogram' ? 10 : rows / 4), `read ${read} rows while planning`);
        const planned = name === 'deleted' ? 1_500_000 : rows; // the estimate scales the pages by the statistics' density
        assert.ok(c.plan.rowCount! > planned * 0.85 && c.plan.rowCount! < planned * 1.15, `planned for ${c.plan.rowCount} rows`);
        assert.ok(Math.abs(c.plan.ranges.length - planned / 250_000) <= 1, `${c.plan.ranges.length} ranges for ${planned} rows at 250 k each`);
        const cuts = c.plan.ranges.slice(0, -1).map((r) => Number((r as KeyRange).upper));
        assert.equal(
          cuts.every((cut) => bounds.has(String(cut))),
          from === 'histogram',
          `cuts ${cuts.join(' ')} ${from === 'histogram' ? 'are' : 'are not all'} histogram bounds`,
        );
        // A stale histogram would put every cut below 1.5 M (grown), or the last one above 1.2 M (deleted).
        if (name === 'grown') assert.ok(cuts.at(-1)! > rows * 0.75, `cuts ${cuts.join(' ')} reach the top of the keys`);
        if (name === 'deleted') assert.ok(cuts.at(-1)! < 1_200_000, `cuts ${cuts.join(' ')} stay below the largest key left`);
        await c.abort();
      } finally {
        await closeSession(client);
        if (name === 'refused') {
          await admin().query('GRANT SELECT ON pg_catalog.pg_stat_all_tables TO PUBLIC');
          await admin().query('DROP OWNED BY pgx_planner; DROP ROLE pgx_planner');
        }
        await admin().query('DROP SCHEMA pfl CASCADE');
      }
    });
  }

  it('a table whose names need quoting (mixed case, a space, a dot) still takes its cuts from its histogram', async () => {
    await admin().query(
      `DROP SCHEMA IF EXISTS "Pq Mixed" CASCADE; CREATE SCHEMA "Pq Mixed"; CREATE TABLE "Pq Mixed"."T.x" (id bigint PRIMARY KEY) WITH (autovacuum_enabled = false)`,
    );
    // Under load the insert's counts reached the statistics after the ANALYZE in its own query: the table looked changed since.
    await changeAndReport('INSERT INTO "Pq Mixed"."T.x" SELECT g FROM generate_series(1, 100000) g', 100_000, '"Pq Mixed"."T.x"');
    await admin().query('ANALYZE "Pq Mixed"."T.x"');
    const bounds = new Set(await histogram('Pq Mixed.T.x'));
    assert.ok(bounds.size > 4, 'ANALYZE made a histogram');
    const client = await openSession(live().pg.url, 'coordinator');
    try {
      const c = await SnapshotCoordinator.export(client, { schema: 'Pq Mixed', table: 'T.x' }, { partitions: 4 });
      const read = await rowsRead(client, '"Pq Mixed"."T.x"');
      assert.ok(read < 10, `read ${read} rows while planning`);
      const cuts = c.plan.ranges.slice(0, -1).map((r) => (r as KeyRange).upper!);
      assert.equal(cuts.length, 3);
      assert.ok(
        cuts.every((cut) => bounds.has(cut)),
        `cuts ${cuts.join(' ')} are histogram bounds`,
      );
      await c.abort();
    } finally {
      await closeSession(client);
      await admin().query('DROP SCHEMA "Pq Mixed" CASCADE');
    }
  });

  it('a key with most-common values takes its cuts from a sample: the histogram leaves those values out', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS pmc CASCADE; CREATE SCHEMA pmc; CREATE TABLE pmc.t (k int, v int) WITH (autovacuum_enabled = false)`);
    // A tenth of the rows share k = 0.
    await admin().query(`INSERT INTO pmc.t SELECT CASE WHEN g % 10 = 0 THEN 0 ELSE g END, g FROM generate_series(1, 100000) g; ANALYZE pmc.t`);
    const mcv = await admin().query(`SELECT most_common_vals IS NOT NULL AS has FROM pg_stats WHERE schemaname = 'pmc' AND tablename = 't' AND attname = 'k'`);
    assert.equal(mcv.rows[0]?.has, true, 'ANALYZE found most-common values');
    const bounds = new Set(await histogram('pmc.t', 'k'));
    assert.ok(bounds.size > 4, 'and a histogram of the other values');
    const run = await exportPartitions('pmc', { partitions: 4 }, undefined, 'k');
    const cuts = run.plan.ranges.slice(0, -1).map((r) => (r as KeyRange).upper!);
    assert.ok(!cuts.every((cut) => bounds.has(cut)), `cuts ${cuts.join(' ')} are not the histogram's`);
    assert.deepEqual(run.actual, run.expected, 'every row exactly once');
    assertBalanced(run, 4);
    await admin().query('DROP SCHEMA pmc CASCADE');
  });

  it('a text key takes its cuts from a sample sorted now, never from a histogram sorted at ANALYZE', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS ptk CASCADE; CREATE SCHEMA ptk; CREATE TABLE ptk.t (k text PRIMARY KEY) WITH (autovacuum_enabled = false)`);
    await admin().query(`INSERT INTO ptk.t SELECT md5(g::text) FROM generate_series(1, 20000) g; ANALYZE ptk.t`);
    const client = await openSession(live().pg.url, 'coordinator');
    try {
      const c = await SnapshotCoordinator.export(client, { schema: 'ptk', table: 't' }, { partitions: 4 });
      const read = await rowsRead(client, 'ptk.t');
      assert.equal(c.plan.ranges.length, 4);
      assert.ok(read >= 20_000, `the whole table (under one sample's size) was read for its quantiles: ${read} rows`);
      await c.abort();
    } finally {
      await closeSession(client);
      await admin().query('DROP SCHEMA ptk CASCADE');
    }
  });

  it('a uuid primary key splits by index-probed bounds and sampled quantiles (no min/max over uuid)', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS pu CASCADE; CREATE SCHEMA pu; CREATE TABLE pu.t (id uuid PRIMARY KEY, v int)`);
    await admin().query(`INSERT INTO pu.t SELECT md5(g::text)::uuid, g FROM generate_series(1, 10000) g`);
    const run = await exportPartitions('pu', { partitions: 4 });
    assert.equal(run.plan.table.key?.kind, 'uuid');
    assertBalanced(run, 4);
    const auto = await exportPartitions('pu', { partitions: 'auto', targetRowsPerPartition: 2_500, maxPartitions: 8 });
    assert.equal(auto.plan.rowCount, 10_000);
    assertBalanced(auto, 4);
  });

  it('a primary key of a domain type (over bigint, over a domain over text) splits as its base type', async () => {
    // Before, the key's type was the domain's name, which no key kind knows: page ranges, and --key was refused.
    await admin().query(`DROP SCHEMA IF EXISTS pdom CASCADE; CREATE SCHEMA pdom;
      CREATE DOMAIN pdom.order_id AS bigint CHECK (VALUE > 0); CREATE DOMAIN pdom.code AS text; CREATE DOMAIN pdom.sku AS pdom.code;
      CREATE TABLE pdom.t (id pdom.order_id PRIMARY KEY, sku pdom.sku, v int);
      INSERT INTO pdom.t SELECT g, 'sku-' || g, g FROM generate_series(1, 10000) g`);
    const run = await exportPartitions('pdom', { partitions: 4 });
    assert.deepEqual([run.plan.table.key?.name, run.plan.table.key?.kind], ['id', 'integer']);
    assertBalanced(run, 4);
    const byText = await exportPartitions('pdom', { partitions: 4 }, undefined, 'sku');
    assert.equal(byText.plan.table.key?.kind, 'text');
    assertBalanced(byText, 4);
    await admin().query('DROP SCHEMA pdom CASCADE');
  });

  it('a large view split by a key takes its cuts from a sample of its rows (TABLESAMPLE refuses a view)', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS pview CASCADE; CREATE SCHEMA pview; CREATE TABLE pview.base (id int PRIMARY KEY, v text);
      INSERT INTO pview.base SELECT g, md5(g::text) FROM generate_series(1, 200000) g; ANALYZE pview.base;
      CREATE VIEW pview.t AS SELECT id, v FROM pview.base`);
    assertBalanced(await exportPartitions('pview', { partitions: 4 }, undefined, 'id'), 4);
  });

  it('a text key splits by quantiles under its own collation; NULLs and empty strings exported exactly once', async () => {
    const collation = await nonBytewiseCollation();
    await admin().query(`DROP SCHEMA IF EXISTS ptx CASCADE; CREATE SCHEMA ptx; CREATE TABLE ptx.t (k text COLLATE ${collation}, v int)`);
    // Upper/lower case and accents interleave under a linguistic collation but not by bytes.
    await admin().query(`
      INSERT INTO ptx.t
        SELECT CASE WHEN g % 50 = 0 THEN NULL WHEN g % 50 = 1 THEN '' ELSE (ARRAY['a', 'B', 'é', 'Z', 'ö', 'c', 'Ä', 'ß'])[g % 8 + 1] || g END, g
          FROM generate_series(1, 8000) g`);
    const differs = await admin().query(`SELECT array_agg(k ORDER BY k) IS DISTINCT FROM array_agg(k ORDER BY k COLLATE "C") AS differs FROM ptx.t`);
    assert.equal(differs.rows[0].differs, true, 'collation order differs from byte order in this data');
    const run = await exportPartitions('ptx', { partitions: 5 }, undefined, 'k');
    assert.equal(run.plan.table.key?.kind, 'text');
    assert.deepEqual(
      run.plan.ranges.map((r) => r.kind),
      ['key', 'key', 'key', 'key', 'nulls'],
    );
    assert.deepEqual(run.actual, run.expected, 'every row exactly once');
    assert.equal(run.parts.at(-1)!.rows, 160, 'the NULL partition');
    const keyed = run.parts.slice(0, -1).map((p) => p.rows);
    assert.ok(
      keyed.every((r) => r >= 7840 / 4 / 2 && r <= (7840 / 4) * 2),
      `balanced: ${keyed.join(', ')}`,
    );
    const empties = await admin().query(`SELECT count(*)::int AS n FROM ptx.t WHERE k = ''`);
    assert.equal(empties.rows[0].n, 160);
  });

  it('a text key with few distinct values gives fewer ranges, never an empty or duplicated one', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS ptf CASCADE; CREATE SCHEMA ptf; CREATE TABLE ptf.t (k varchar(10), v int)`);
    await admin().query(`INSERT INTO ptf.t SELECT CASE WHEN g % 3 = 0 THEN '' ELSE 'x' END, g FROM generate_series(1, 3000) g`);
    const run = await exportPartitions('ptf', { partitions: 8 }, undefined, 'k');
    assert.deepEqual(run.plan.ranges, [
      { kind: 'key', lower: null, upper: 'x' },
      { kind: 'key', lower: 'x', upper: null },
    ]);
    assert.deepEqual(
      run.parts.map((p) => p.rows),
      [1000, 2000],
    );
    assert.deepEqual(run.actual, run.expected);
  });

  it('a table with no usable key splits by ctid page ranges', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS pc CASCADE; CREATE SCHEMA pc; CREATE TABLE pc.t (v text)`);
    await admin().query(`INSERT INTO pc.t SELECT repeat('x', 200) || g FROM generate_series(1, 5000) g`);
    const run = await exportPartitions('pc', { partitions: 3 });
    assert.ok(run.plan.ranges.every((r) => r.kind === 'pages'));
    assert.equal(run.parts.length, 3);
    assert.deepEqual(run.actual, run.expected);
    assert.equal(run.actual.count, 5000);
  });

  it('a role that may read a partitioned table but none of its partitions itself plans it (auto, and a fixed count by its key): leaves it cannot count are estimated', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS pp CASCADE; CREATE SCHEMA pp;
      CREATE TABLE pp.t (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
      CREATE TABLE pp.t1 PARTITION OF pp.t FOR VALUES FROM (0) TO (50000); CREATE TABLE pp.t2 PARTITION OF pp.t FOR VALUES FROM (50000) TO (MAXVALUE);
      INSERT INTO pp.t SELECT g, repeat('v', 100) FROM generate_series(1, 100000) g;
      DROP ROLE IF EXISTS pgx_parent_reader; CREATE ROLE pgx_parent_reader LOGIN;
      GRANT USAGE ON SCHEMA pp TO pgx_parent_reader; GRANT SELECT ON pp.t TO pgx_parent_reader`);
    const url = new URL(live().pg.url);
    url.username = 'pgx_parent_reader';
    try {
      for (const planning of [{ partitions: 'auto' }, { partitions: 3 }] as const) {
        const client = await openSession(url.toString(), 'coordinator');
        try {
          // It failed with SQLSTATE_42501: permission denied for table t1 (a count of the leaf itself).
          const { plan } = await SnapshotCoordinator.export(client, { schema: 'pp', table: 't' }, planning);
          assert.ok(
            plan.ranges.every((r) => r.kind === 'key'),
            JSON.stringify(plan.ranges),
          );
          if (planning.partitions === 'auto') assert.ok(plan.rowCount! > 10_000, `estimated ${plan.rowCount} rows`);
          else assert.equal(plan.ranges.length, 3);
        } finally {
          await closeSession(client);
        }
      }
    } finally {
      await admin().query('DROP SCHEMA pp CASCADE; DROP ROLE pgx_parent_reader');
    }
  });

  it('a partitioned table with no usable key splits by ctid page ranges over its leaves (it was one range on one session): every row once', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS pk CASCADE; CREATE SCHEMA pk;
      CREATE TABLE pk.t (at int NOT NULL, v text) PARTITION BY RANGE (at);
      CREATE TABLE pk.t1 PARTITION OF pk.t FOR VALUES FROM (0) TO (1000); CREATE TABLE pk.t2 PARTITION OF pk.t FOR VALUES FROM (1000) TO (MAXVALUE) PARTITION BY RANGE (at);
      CREATE TABLE pk.t2a PARTITION OF pk.t2 FOR VALUES FROM (1000) TO (MAXVALUE);
      INSERT INTO pk.t SELECT g % 3000, repeat('x', 200) || g FROM generate_series(1, 9000) g`);
    const run = await exportPartitions('pk', { partitions: 3 });
    assert.deepEqual(
      run.plan.ranges.map((r) => r.kind),
      ['pages', 'pages', 'pages'],
    );
    assert.ok(
      run.parts.every((p) => p.rows > 0),
      JSON.stringify(run.parts.map((p) => p.rows)),
    );
    assert.deepEqual(run.actual, run.expected);
    assert.equal(run.actual.count, 9000);
  });

  it('a partition whose snapshot is gone fails with SNAPSHOT_LOST', async () => {
    await fourRows('pl');
    const coordinatorClient = await openSession(live().pg.url, 'coordinator');
    const reader = await openSession(live().pg.url, 'partition');
    try {
      const c = await SnapshotCoordinator.export(coordinatorClient, { schema: 'pl', table: 't' }, { partitions: 2 });
      await c.abort();
      await assert.rejects(
        copyPartition(
          reader,
          {
            snapshotId: c.plan.snapshotId,
            table: { schema: 'pl', table: 't', columns: ['id', 'v'] },
            key: c.plan.table.key,
            range: c.plan.ranges[0]!,
            format: csv,
          },
          new LocalFileSink(join(live().outRoot, 'pl.csv'), 0o600),
        ),
        { code: ErrorCode.SNAPSHOT_LOST },
      );
    } finally {
      await Promise.all([closeSession(coordinatorClient), closeSession(reader)]);
    }
  });

  for (const hostile of ["00000003-0000001B-1'; DROP TABLE pl.t; --", '', '../1', 'abc', '00000003-0000001b-1x']) {
    it(`rejects the snapshot id ${JSON.stringify(hostile)} before any SQL runs`, async () => {
      const calls: string[] = [];
      const fake = { query: async (sql: string) => void calls.push(sql) } as unknown as Client;
      await assert.rejects(
        copyPartition(
          fake,
          { snapshotId: hostile, table: { schema: 'pl', table: 't', columns: ['id'] }, key: null, range: { kind: 'all' }, format: csv },
          new LocalFileSink('/nonexistent/x', 0o600),
        ),
        { code: ErrorCode.SNAPSHOT_ID_INVALID },
      );
      assert.deepEqual(calls, []);
    });
  }
});

function exportPartitionsWithKey(schema: string, key: string, partitions: number) {
  return exportPartitions(schema, { partitions }, undefined, key);
}

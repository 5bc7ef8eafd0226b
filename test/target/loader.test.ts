/**
 * The built-in PostgreSQL target loader, with a second database as the target: exact rows,
 * checksum verification, a COMMIT whose acknowledgement is lost (reconciled through the fence),
 * an unreachable target after that (files retained), and a retried load that loads once.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from 'pg';
import { DefaultLogger } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createLoadActivities } from '../../src/activities/load';
import type { LoadReport } from '../../src/contract/load-report';
import { startExtraction, waitForManifest } from '../../src/client';
import { FENCE_COLUMNS, ensureFence, fenceRows, fenceVerdict, reconcileCommit } from '../../src/target/loader';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { runOutputs } from '../../src/contract/run-outputs';
import { OutputStores } from '../../src/storage/output-stores';
import { targetUrl as configuredTargetUrl } from '../../src/config';
import { admin, tableDigest } from '../support/database';
import { bucketContents, s3Service } from '../support/s3';
import { eventually } from '../support/eventually';
import { type PgProxy, pgProxy } from '../support/pg-proxy';
import { live } from '../support/services';
import { withWorker } from '../support/worker';
import { TARGET_DB, addArchiveChild, archiveRows, loadsMixedTable, onTarget, slowCommit, targetDigest, targetUrl, terminateTargetAtCommit } from './target-db';

/** A simple-protocol `COMMIT` as a client sends it: 'Q', its length, the statement, NUL. */
const COMMIT_QUERY = Buffer.concat([Buffer.from([0x51, 0, 0, 0, 11]), Buffer.from('COMMIT\0')]);

/**
 * Forwards to the server at `port`; a session that sends `COMMIT` has it forwarded, then, once the
 * server has had time to commit, loses its connection before the answer: a lost acknowledgement.
 */
async function cutAfterCommit(port: number): Promise<PgProxy & { cut(): number }> {
  let cut = 0;
  const proxy = await pgProxy(port, (client, upstream) => {
    upstream.pipe(client);
    client.on('data', (chunk: Buffer) => {
      if (!chunk.includes(COMMIT_QUERY)) return void upstream.write(chunk);
      upstream.unpipe(client);
      upstream.write(chunk);
      cut += 1;
      setTimeout(() => (client.destroy(), upstream.destroy()), 500);
    });
  });
  return { ...proxy, cut: () => cut };
}

describe('built-in PostgreSQL target loader (live)', function () {
  this.timeout(120_000);
  const source = loadsMixedTable('src', 20_000);

  const run = (extra: Record<string, unknown> = {}, worker: { s3Env?: Record<string, string> } = {}) =>
    withWorker(
      async ({ taskQueue }) => {
        const handle = await startExtraction(
          live().temporal.client,
          { table: source.table, partitions: 3, target: { name: 'warehouse', table: 'dst.t', mode: 'append' }, ...extra },
          { taskQueue },
        );
        const manifest = await waitForManifest(handle);
        return { result: (await handle.result()) as ExtractionResult, manifest };
      },
      { targets: { warehouse: targetUrl() }, ...worker },
    );

  it('loads s3:// outputs as it loads local files, then deletes the objects', async () => {
    const s3 = await s3Service();
    await s3.createBucket('pgx-load');
    const { result, manifest } = await run({ outDir: 's3://pgx-load/runs' }, { s3Env: s3.env });
    assert.ok(manifest.files.every((f) => f.path.startsWith('s3://pgx-load/runs/')));
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.deepEqual(result.load, { outcome: 'committed', reason: null, rows: 20_000 });
    assert.deepEqual(await targetDigest(), source.expected);
    assert.deepEqual(await bucketContents('pgx-load', 'runs/'), { objects: [], uploads: [] });
  });

  it('loads the exact rows in one transaction with a fence row, then the files are deleted (success)', async () => {
    const { result, manifest } = await run();
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.deepEqual(result.load, { outcome: 'committed', reason: null, rows: 20_000 });
    assert.deepEqual(await targetDigest(), source.expected);
    const fence = await onTarget((c) => c.query('SELECT operation_id, rows FROM pgextract.commit_fence'));
    assert.equal(fence.rows.length, 1);
    assert.equal(fence.rows[0].operation_id, result.operationId);
    for (const f of manifest.files) await assert.rejects(access(f.path));
  });

  it('loads zstd files (compression zstd), binary from S3 and csv from local files, as it loads plain ones', async () => {
    const s3 = await s3Service();
    await s3.createBucket('pgx-load-zstd');
    for (const [extra, worker] of [
      [{ compression: 'zstd', format: 'binary', outDir: 's3://pgx-load-zstd/runs' }, { s3Env: s3.env }],
      [{ compression: 'zstd', target: { name: 'warehouse', table: 'dst.t', mode: 'replace' } }, {}],
    ] as const) {
      const { result, manifest } = await run(extra, worker);
      assert.ok(manifest.files.every((f) => f.path.endsWith('.zst')));
      assert.equal(result.terminalReceipt.outcome, 'success');
      assert.deepEqual(result.load, { outcome: 'committed', reason: null, rows: 20_000 });
      assert.deepEqual(await targetDigest(), source.expected);
    }
  });

  it("a function planted on the target's search_path that matches an argument better than pg_catalog's is never called with the loader's rights", async () => {
    // Anyone with CREATE on a schema of the path (public, before PostgreSQL 15) could plant it; the catalog query's
    // unnest(int2vector) resolved to it on the target session, which ran with the server's path.
    await onTarget((c) =>
      c.query(`CREATE FUNCTION public.unnest(int2vector) RETURNS SETOF int2 LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'planted function called'; END $$`),
    );
    const { result } = await run({ partitions: 1 });
    assert.equal(result.terminalReceipt.outcome, 'success', JSON.stringify(result.load));
    assert.deepEqual(await targetDigest(), source.expected);
  });

  it("the target's own code a load fires resolves names by the server's search_path: a trigger, and a deferred one at COMMIT", async () => {
    await onTarget((c) =>
      c.query(`CREATE TABLE public.audit (what text);
        CREATE FUNCTION dst.noted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit VALUES (TG_ARGV[0]); RETURN NULL; END $$;
        CREATE TRIGGER loaded AFTER INSERT ON dst.t FOR EACH STATEMENT EXECUTE FUNCTION dst.noted('statement');
        CREATE CONSTRAINT TRIGGER checked AFTER INSERT ON dst.t DEFERRABLE FOR EACH ROW EXECUTE FUNCTION dst.noted('deferred')`),
    );
    const { result } = await run({ partitions: 2, target: { name: 'warehouse', table: 'dst.t', mode: 'replace' } });
    assert.equal(result.terminalReceipt.outcome, 'success', JSON.stringify(result.load));
    const audit = await onTarget(async (c) => (await c.query('SELECT what, count(*)::int AS n FROM public.audit GROUP BY what ORDER BY what')).rows);
    assert.deepEqual(audit, [
      { what: 'deferred', n: 20_000 },
      { what: 'statement', n: 2 },
    ]);
  });

  it("a domain's CHECK on a staged target's column resolves names by the server's search_path (files through staging, and a stream)", async () => {
    // Staging has the target's column types, so its COPY runs the CHECK; before, it ran under the empty path and failed.
    await onTarget((c) =>
      c.query(`CREATE TABLE public.allowed (ok boolean); INSERT INTO public.allowed VALUES (true);
        CREATE FUNCTION public.allowed_now(text) RETURNS boolean LANGUAGE sql AS $$ SELECT ok FROM allowed $$;
        CREATE DOMAIN public.checked_text AS text CHECK (public.allowed_now(VALUE));
        ALTER TABLE dst.t ALTER COLUMN name TYPE public.checked_text, ADD COLUMN twice numeric GENERATED ALWAYS AS (amount * 2) STORED`),
    );
    for (const via of ['files', 'stream'] as const) {
      const { result } = await run({ partitions: 2, target: { name: 'warehouse', table: 'dst.t', mode: 'replace', via } });
      assert.equal(result.terminalReceipt.outcome, 'success', `${via}: ${JSON.stringify(result.load)}`);
      assert.equal(await onTarget(async (c) => (await c.query('SELECT count(*)::int AS n FROM dst.t')).rows[0].n), 20_000, via);
    }
  });

  it("replace mode swaps the target contents in the same transaction, and leaves an inheritance child's rows", async () => {
    await onTarget((c) => c.query(`INSERT INTO dst.t (id, name) VALUES (-1, 'stale')`));
    await addArchiveChild();
    const { result } = await run({ target: { name: 'warehouse', table: 'dst.t', mode: 'replace' } });
    assert.equal(result.terminalReceipt.outcome, 'success');
    assert.deepEqual(await targetDigest(), source.expected);
    assert.deepEqual(await archiveRows(), [{ id: -2, name: 'archived' }]);
  });

  it('the target backend terminated at the moment of COMMIT → reconciled as not committed → abort', async () => {
    await slowCommit();
    const [{ result }] = await Promise.all([run(), terminateTargetAtCommit()]);
    assert.deepEqual(result.load, {
      outcome: 'failed',
      reason: 'TARGET_COMMIT_AMBIGUOUS',
      rows: null,
      message: 'the COMMIT was sent but its acknowledgement was lost; the target rolled the transaction back',
    });
    assert.equal(result.terminalReceipt.outcome, 'abort');
    assert.equal((await targetDigest()).count, 0, 'nothing committed');
  });

  it('the target unreachable after an ambiguous COMMIT → retain_commit_unknown, files kept, source sessions closed', async () => {
    await slowCommit();
    const [{ result, manifest }] = await Promise.all([
      run(),
      terminateTargetAtCommit(async () => void (await admin().query(`ALTER DATABASE ${TARGET_DB} ALLOW_CONNECTIONS false`))),
    ]);
    assert.deepEqual(result.load, {
      outcome: 'unknown',
      reason: 'TARGET_COMMIT_AMBIGUOUS',
      rows: null,
      message: 'the COMMIT was sent but its acknowledgement was lost; the target could not say whether it committed',
    });
    assert.equal(result.terminalReceipt.outcome, 'retain_commit_unknown');
    for (const f of manifest.files) await access(f.path);
    assert.deepEqual([...result.terminalReceipt.filesRetained].sort(), runOutputs(manifest).sort());
  });

  describe('the load activity itself', () => {
    const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
    let files: { path: string; rows: number; sha256: string }[];
    before(async () => {
      // Files as an extraction would leave them (CSV with header, two rows each).
      files = [];
      for (const [i, body] of ['id,name\n1,a\n2,b\n', 'id,name\n3,c\n4,d\n'].entries()) {
        const path = join(live().outRoot, `load-${i}.csv`);
        await writeFile(path, body);
        files.push({ path, rows: 2, sha256: createHash('sha256').update(body).digest('hex') });
      }
    });
    /** The load activities, connecting to the target at `url`. */
    const activitiesAt = (url: string) =>
      createLoadActivities({
        targetUrl: () => url,
        sourceUrl: () => live().pg.url,
        stores: new OutputStores({ outputRoot: live().outRoot, fileMode: 0o600 }),
      });
    /** The load activities, connecting to the target as `role` (the target URL's own user when absent). */
    const activitiesAs = (role?: string) => {
      const url = new URL(targetUrl());
      if (role) url.username = role;
      return activitiesAt(url.toString());
    };
    /** Runs `work` with the load activity of a new login role `role`, dropped with all it owns afterwards. */
    const asNewRole = async (role: string, work: (load: ReturnType<typeof activitiesAs>['loadTarget']) => Promise<void>): Promise<void> => {
      await admin().query(`CREATE ROLE ${role} LOGIN`);
      try {
        await work(activitiesAs(role).loadTarget);
      } finally {
        await onTarget((c) => c.query(`DROP OWNED BY ${role}`));
        await admin().query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
      }
    };
    const activity = () => activitiesAs().loadTarget;
    const request = (patch: Record<string, unknown> = {}) => ({
      target: { name: 'warehouse', table: 'dst.u', mode: 'append' as const },
      files,
      format: { format: 'csv' as const, header: true, gzip: false },
      operationId: 'op-retry-1',
      ...patch,
    });
    beforeEach(async () => onTarget((c) => c.query('CREATE TABLE dst.u (id int, name text)')));

    it('a sha256 mismatch aborts before commit: nothing lands', async () => {
      const bad = [{ ...files[0]!, sha256: 'f'.repeat(64) }, files[1]!];
      const report: LoadReport = await env.run(activity(), request({ files: bad }));
      assert.deepEqual([report.outcome, report.reason], ['failed', 'TARGET_CHECKSUM_MISMATCH']);
      assert.equal((await onTarget((c) => c.query('SELECT count(*)::int AS n FROM dst.u'))).rows[0].n, 0);
    });

    it("a target trigger's RAISE EXCEPTION fails the load at its first try (retrying meets it again): nothing lands", async () => {
      await onTarget((c) =>
        c.query(`CREATE FUNCTION dst.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no rows here'; END $$;
                 CREATE TRIGGER refuse BEFORE INSERT ON dst.u FOR EACH ROW EXECUTE FUNCTION dst.refuse()`),
      );
      try {
        const report: LoadReport = await env.run(activity(), request({ operationId: 'op-raise' }));
        assert.deepEqual([report.outcome, report.reason], ['failed', 'SQLSTATE_P0001']);
        assert.equal((await onTarget((c) => c.query('SELECT count(*)::int AS n FROM dst.u'))).rows[0].n, 0);
      } finally {
        await onTarget((c) => c.query('DROP FUNCTION dst.refuse() CASCADE'));
      }
    });

    it('a retried load (same operation id) loads exactly once', async () => {
      const first: LoadReport = await env.run(activity(), request());
      const second: LoadReport = await env.run(activity(), request());
      assert.deepEqual([first.outcome, first.rows], ['committed', 4]);
      assert.deepEqual([second.outcome, second.rows], ['committed', 4], 'the fence answered the retry, with the rows it records');
      assert.equal((await onTarget((c) => c.query('SELECT count(*)::int AS n FROM dst.u'))).rows[0].n, 4);
    });

    it('a retry that fails before it reaches the fence answers from the fence: an earlier attempt committed → committed; none → failed', async () => {
      const retry = new MockActivityEnvironment({ attempt: 2 }, { logger: new DefaultLogger('ERROR') });
      const first: LoadReport = await env.run(activity(), request({ operationId: 'op-earlier' }));
      assert.equal(first.outcome, 'committed');
      // The first attempt's report was lost (its worker vanished); the table is dropped before the retry.
      await onTarget((c) => c.query('DROP TABLE dst.u'));
      assert.deepEqual(await retry.run(activity(), request({ operationId: 'op-earlier' })), {
        outcome: 'committed',
        operationId: 'op-earlier',
        reason: null,
        rows: 4,
      });
      // A first attempt's failure, or a retry's when no attempt committed, stands.
      for (const [environment, operationId] of [
        [env, 'op-earlier'],
        [retry, 'op-never'],
      ] as const) {
        const report: LoadReport = await environment.run(activity(), request({ operationId }));
        assert.equal(report.outcome, 'failed', operationId);
      }
    });

    it("a retry on a worker without the target's URL cannot read the fence: unknown, not failed (an earlier attempt committed)", async () => {
      const first: LoadReport = await env.run(activity(), request({ operationId: 'op-no-url' }));
      assert.equal(first.outcome, 'committed');
      const unconfigured = createLoadActivities({
        targetUrl: (name) => configuredTargetUrl(name, {}),
        sourceUrl: () => live().pg.url,
        stores: new OutputStores({ outputRoot: live().outRoot, fileMode: 0o600 }),
      }).loadTarget;
      const retry = new MockActivityEnvironment({ attempt: 2 }, { logger: new DefaultLogger('ERROR') });
      const report: LoadReport = await retry.run(unconfigured, request({ operationId: 'op-no-url' }));
      assert.deepEqual([report.outcome, report.reason], ['unknown', 'SOURCE_UNKNOWN']);
    });

    it('loadFenceVerdict, asked of a load that ended without a report: committed where the fence has its row, not_committed where not, unreadable where the target cannot be reached', async () => {
      const loaded: LoadReport = await env.run(activity(), request({ operationId: 'op-verdict' }));
      assert.equal(loaded.outcome, 'committed');
      const verdict = (url: string, operationId: string) => env.run(activitiesAt(url).loadFenceVerdict, { target: 'warehouse', operationId });
      assert.equal(await verdict(targetUrl(), 'op-verdict'), 'committed');
      assert.equal(await verdict(targetUrl(), 'op-verdict-never'), 'not_committed');
      assert.equal(await verdict('postgresql://pgx@127.0.0.1:1/none', 'op-verdict'), 'unreadable');
    });

    it('a COMMIT that committed but whose acknowledgement was lost: reconciled as committed, with the rows it loaded', async () => {
      await onTarget(ensureFence); // made already: the load's own COMMIT is the session's only one
      const proxy = await cutAfterCommit(Number(new URL(targetUrl()).port));
      try {
        const url = new URL(targetUrl());
        url.hostname = '127.0.0.1';
        url.port = String(proxy.port);
        const report: LoadReport = await env.run(activitiesAt(url.toString()).loadTarget, request({ operationId: 'op-ack-lost' }));
        assert.deepEqual(report, { outcome: 'committed', operationId: 'op-ack-lost', reason: 'TARGET_COMMIT_AMBIGUOUS', rows: 4 });
        assert.equal(proxy.cut(), 1, 'the COMMIT was cut off once');
        assert.equal((await onTarget((c) => c.query('SELECT count(*)::int AS n FROM dst.u'))).rows[0].n, 4);
      } finally {
        await proxy.close();
      }
    });

    it('the fence probe of a read-only session (a standby) reads the fence as it is: a claim would be refused', async () => {
      const client = new Client({ connectionString: targetUrl() });
      await client.connect();
      try {
        await ensureFence(client);
        await client.query(`INSERT INTO pgextract.commit_fence (operation_id, intent_digest, target, rows) VALUES ('op-ro', 'x', 'dst.u', 7)`);
        await client.query('SET default_transaction_read_only = on');
        assert.deepEqual([await fenceRows(client, 'op-ro'), await fenceRows(client, 'op-ro-none')], [7, null]);
      } finally {
        await client.end();
      }
    });

    it('a retried load whose target stays unreachable: retried until its last try, which is unknown (an earlier try may have committed)', async () => {
      const unreachable = activitiesAt('postgresql://pgx@127.0.0.1:1/none').loadTarget;
      const logger = new DefaultLogger('ERROR');
      const retried = new MockActivityEnvironment({ attempt: 2, retryPolicy: { maximumAttempts: 3 } }, { logger });
      await assert.rejects(retried.run(unreachable, request({ operationId: 'op-away' })), /ECONNREFUSED|connect/);
      const last = new MockActivityEnvironment({ attempt: 3, retryPolicy: { maximumAttempts: 3 } }, { logger });
      const report: LoadReport = await last.run(unreachable, request({ operationId: 'op-away' }));
      assert.equal(report.outcome, 'unknown');
      assert.match(report.message!, /^an earlier attempt of this load may have committed, and the fence could not be read: /);
      // A first try that is also the last says what it met: nothing can have committed before it.
      const only = new MockActivityEnvironment({ attempt: 1, retryPolicy: { maximumAttempts: 1 } }, { logger });
      await assert.rejects(only.run(unreachable, request({ operationId: 'op-away' })), /ECONNREFUSED|connect/);
    });

    it('a role that may insert into the target table but not create tables in its schema loads it: rows COPYed straight in, no staging table, and its sequence left as it is (the role may set it but not read the ids)', async () => {
      await asNewRole('pgx_inserter', async (inserter) => {
        await admin().query(`GRANT CREATE ON DATABASE ${TARGET_DB} TO pgx_inserter`);
        await onTarget((c) =>
          c.query(`CREATE SEQUENCE dst.u_id_seq OWNED BY dst.u.id; ALTER TABLE dst.u ALTER id SET DEFAULT nextval('dst.u_id_seq');
                   GRANT USAGE ON SCHEMA dst TO pgx_inserter; GRANT INSERT ON dst.u TO pgx_inserter; GRANT USAGE, SELECT, UPDATE ON dst.u_id_seq TO pgx_inserter`),
        );
        const report: LoadReport = await env.run(inserter, request({ operationId: 'op-inserter' }));
        assert.deepEqual([report.outcome, report.reason, report.rows], ['committed', null, 4]);
        assert.equal((await onTarget((c) => c.query('SELECT count(*)::int AS n FROM dst.u'))).rows[0].n, 4);
        assert.deepEqual((await onTarget((c) => c.query('SELECT last_value::int, is_called FROM dst.u_id_seq'))).rows, [{ last_value: 1, is_called: false }]);
      });
    });

    it("a row security policy whose function names a table unqualified: its rows load through staging and its sequence moves past them, the policy's names resolved by the server's search_path", async () => {
      await asNewRole('pgx_policed', async (policed) => {
        await admin().query(`GRANT CREATE ON DATABASE ${TARGET_DB} TO pgx_policed`);
        await onTarget((c) =>
          c.query(`CREATE TABLE public.floors (low int); INSERT INTO public.floors VALUES (0); GRANT SELECT ON public.floors TO pgx_policed;
                   CREATE FUNCTION public.above_floor(int) RETURNS boolean LANGUAGE sql AS $$ SELECT $1 > (SELECT low FROM floors) $$;
                   CREATE SEQUENCE dst.u_id_seq OWNED BY dst.u.id; ALTER TABLE dst.u ALTER id SET DEFAULT nextval('dst.u_id_seq');
                   ALTER TABLE dst.u ENABLE ROW LEVEL SECURITY; CREATE POLICY above ON dst.u USING (public.above_floor(id));
                   GRANT USAGE, CREATE ON SCHEMA dst TO pgx_policed; GRANT SELECT, INSERT ON dst.u TO pgx_policed; GRANT USAGE, SELECT, UPDATE ON dst.u_id_seq TO pgx_policed`),
        );
        const report: LoadReport = await env.run(policed, request({ operationId: 'op-policed' }));
        assert.deepEqual([report.outcome, report.reason, report.rows], ['committed', null, 4], report.message);
        assert.deepEqual((await onTarget((c) => c.query('SELECT last_value::int, is_called FROM dst.u_id_seq'))).rows, [{ last_value: 4, is_called: true }]);
      });
    });

    it('a role without CREATE on the database loads once an administrator has made the fence; before that it fails naming the permission', async () => {
      await asNewRole('pgx_loader', async (loader) => {
        await onTarget((c) => c.query('GRANT USAGE ON SCHEMA dst TO pgx_loader; GRANT INSERT ON dst.u TO pgx_loader'));
        const refused: LoadReport = await env.run(loader, request({ operationId: 'op-no-fence' }));
        assert.deepEqual([refused.outcome, refused.reason], ['failed', 'SQLSTATE_42501']);
        assert.match(refused.message ?? '', /permission denied for database/);
        // What the README asks of an administrator for such a role. `CREATE SCHEMA IF NOT EXISTS` is refused even with the schema there.
        await onTarget(async (c) => {
          await ensureFence(c);
          await c.query('GRANT USAGE ON SCHEMA pgextract TO pgx_loader; GRANT SELECT, INSERT, UPDATE ON pgextract.commit_fence TO pgx_loader');
        });
        const report: LoadReport = await env.run(loader, request({ operationId: 'op-fenced-by-admin' }));
        assert.deepEqual([report.outcome, report.reason, report.rows], ['committed', null, 4]);
      });
    });

    it('a load that finds another making the fence waits for it, and loads (it failed with SQLSTATE_23505)', async () => {
      const other = new Client({ connectionString: targetUrl() });
      await other.connect();
      try {
        // Another load in the middle of making the fence: its schema is created, not yet committed.
        await other.query('BEGIN');
        await other.query('CREATE SCHEMA pgextract');
        const loading = env.run(activity(), request({ operationId: 'op-while-fencing' })) as Promise<LoadReport>;
        // The load has looked for the fence (missing) and waits on the other's schema.
        const waiting = async () => (await other.query(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`)).rows[0].n === 1;
        await eventually(waiting, 'the load waiting on the schema being created');
        await other.query(`CREATE TABLE pgextract.commit_fence (${FENCE_COLUMNS})`);
        await other.query('COMMIT');
        const report = await loading;
        assert.deepEqual([report.outcome, report.reason, report.rows], ['committed', null, 4], report.message);
      } finally {
        await other.end();
      }
    });

    it('a target with an INSERT rule is filled through staging, so the rule applies as it would to an INSERT', async () => {
      await onTarget((c) => c.query('CREATE TABLE dst.audit (id int); CREATE RULE audit AS ON INSERT TO dst.u DO ALSO INSERT INTO dst.audit VALUES (NEW.id)'));
      const report: LoadReport = await env.run(activity(), request({ operationId: 'op-rule' }));
      assert.deepEqual([report.outcome, report.rows], ['committed', 4]);
      assert.equal((await onTarget((c) => c.query('SELECT count(*)::int AS n FROM dst.audit'))).rows[0].n, 4);
    });

    it("a role with SELECT and INSERT loads through staging: its staging table is temporary, so it needs no CREATE on the target's schema", async () => {
      await asNewRole('pgx_stager', async (stager) => {
        await onTarget(async (c) => {
          await c.query('CREATE TABLE dst.audit (id int); CREATE RULE audit AS ON INSERT TO dst.u DO ALSO INSERT INTO dst.audit VALUES (NEW.id)');
          await ensureFence(c);
          await c.query(`GRANT USAGE ON SCHEMA dst, pgextract TO pgx_stager; GRANT SELECT, INSERT ON dst.u TO pgx_stager;
                         GRANT SELECT, INSERT, UPDATE ON pgextract.commit_fence TO pgx_stager`);
        });
        const report: LoadReport = await env.run(stager, request({ operationId: 'op-stager' }));
        assert.deepEqual([report.outcome, report.reason, report.rows], ['committed', null, 4], report.message);
        assert.equal((await onTarget((c) => c.query('SELECT count(*)::int AS n FROM dst.audit'))).rows[0].n, 4, 'filled through staging');
      });
    });

    it("replace through staging empties the target's own rows, not an inheritance child's", async () => {
      await onTarget((c) =>
        c.query(`CREATE RULE keep AS ON INSERT TO dst.u WHERE false DO ALSO NOTHING;
                 INSERT INTO dst.u VALUES (-1, 'stale'); CREATE TABLE dst.u_archive () INHERITS (dst.u); INSERT INTO dst.u_archive VALUES (-2, 'archived')`),
      );
      const report: LoadReport = await env.run(
        activity(),
        request({ operationId: 'op-replace-staged', target: { name: 'warehouse', table: 'dst.u', mode: 'replace' } }),
      );
      assert.deepEqual([report.outcome, report.rows], ['committed', 4]);
      const left = await onTarget(
        async (c) => (await c.query('SELECT (SELECT count(*) FROM ONLY dst.u)::int AS own, (SELECT count(*) FROM dst.u_archive)::int AS archived')).rows[0],
      );
      assert.deepEqual(left, { own: 4, archived: 1 });
    });

    it('a load whose files are outside the output root is refused: failed, OUTPUT_PATH_ESCAPES_ROOT', async () => {
      const report: LoadReport = await env.run(activity(), request({ files: [{ path: '/etc/hostname', rows: 1, sha256: 'a'.repeat(64) }] }));
      assert.deepEqual([report.outcome, report.reason], ['failed', 'OUTPUT_PATH_ESCAPES_ROOT']);
    });

    it("a set's load takes its columns from the data package, which must match its sha256 and list every table", async () => {
      const setLoad = activitiesAs().loadTargetSet;
      // The files hold id, name, as the package says; the target table is (name, id): each field loads into the column of its name.
      await onTarget((c) => c.query('DROP TABLE dst.u; CREATE TABLE dst.u (name text, id text)'));
      const write = async (pgTable: string) => {
        const body = JSON.stringify({
          resources: [
            {
              pgTable,
              schema: {
                fields: [
                  { name: 'id', pgType: 'integer' },
                  { name: 'name', pgType: 'text' },
                ],
              },
            },
          ],
        });
        const path = join(live().outRoot, `package-${pgTable}.json`);
        await writeFile(path, body);
        return { path, sha256: createHash('sha256').update(body).digest('hex') };
      };
      const setRequest = (dataPackage: { path: string; sha256: string }, operationId: string) => ({
        target: { name: 'warehouse', mode: 'append' as const, schema: 'dst' },
        files: files.map((f) => ({ ...f, table: 'src.u' })),
        format: { format: 'csv' as const, header: true, gzip: false },
        operationId,
        dataPackage,
      });
      const listed = await write('src.u');
      const tampered: LoadReport = await env.run(setLoad, setRequest({ ...listed, sha256: 'c'.repeat(64) }, 'op-set-tampered'));
      assert.deepEqual([tampered.outcome, tampered.reason], ['failed', 'TARGET_CHECKSUM_MISMATCH']);
      const unlisted: LoadReport = await env.run(setLoad, setRequest(await write('src.other'), 'op-set-unlisted'));
      assert.deepEqual([unlisted.outcome, unlisted.reason], ['failed', 'INPUT_INVALID']);
      assert.match(unlisted.message ?? '', /lists no table src\.u/);
      const loaded: LoadReport = await env.run(setLoad, setRequest(listed, 'op-set-packaged'));
      assert.deepEqual([loaded.outcome, loaded.rows], ['committed', 4]);
      const rows = await onTarget(async (c) => (await c.query('SELECT id, name FROM dst.u ORDER BY id')).rows);
      assert.deepEqual(rows, [
        { id: '1', name: 'a' },
        { id: '2', name: 'b' },
        { id: '3', name: 'c' },
        { id: '4', name: 'd' },
      ]);
    });
  });

  it('the fence verdict: found → committed, other intent → unknown, absent → not committed; an unreachable target → unknown', async () => {
    await onTarget(async (c) => {
      await ensureFence(c);
      await c.query(`INSERT INTO pgextract.commit_fence (operation_id, intent_digest, target, rows) VALUES ('op-a', 'sha256:x', 'dst.t', 1)`);
      assert.equal(await fenceVerdict(c, 'op-a', 'sha256:x'), 'committed');
      assert.equal(await fenceVerdict(c, 'op-a', 'sha256:y'), 'unknown');
      assert.equal(await fenceVerdict(c, 'op-b', 'sha256:x'), 'not_committed');
    });
    const unreachable = async (): Promise<Client> => {
      const c = new Client({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
      await c.connect();
      return c;
    };
    assert.equal(await reconcileCommit(unreachable, { operationId: 'op-a', digest: 'sha256:x', xid: '1000' }), 'unknown');
  });

  describe('internal query (source and target are one database)', () => {
    beforeEach(async () => admin().query(`DROP SCHEMA IF EXISTS dsti CASCADE; CREATE SCHEMA dsti; CREATE TABLE dsti.t (LIKE ${source.table})`));

    /** Loads `table` into `into` with one INSERT … SELECT (both in the live database); the run's result. */
    const loadInternally = (table: string, into: string): Promise<ExtractionResult> =>
      withWorker(
        async ({ taskQueue }) => {
          const handle = await startExtraction(live().temporal.client, { table, target: { name: 'same', table: into, via: 'internal' } }, { taskQueue });
          return (await handle.result()) as ExtractionResult;
        },
        { targets: { same: live().pg.url } },
      );

    it('one INSERT … SELECT behind the fence: exact rows, no files, a receipt with no snapshot claim', async () => {
      const result = await loadInternally(source.table, 'dsti.t');
      assert.equal(result.manifest.strategy, 'internal_query');
      assert.deepEqual(result.manifest.files, []);
      assert.equal(result.terminalReceipt.outcome, 'success');
      assert.deepEqual(await tableDigest('SELECT * FROM dsti.t'), source.expected);
      const r = result.extractionReceipt!;
      assert.ok(r.extractionCompletedAt, 'the window is the statement');
      assert.equal(r.snapshotAuthority, null);
      assert.equal(r.sourceToken, null);
      assert.deepEqual(r.evidence, [{ name: source.table, rows: 20_000, bytes: null, sha256: null }], 'the rows the statement moved, and no file');
      const staging = await admin().query(`SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'pg_extract_stg_%'`);
      assert.equal(staging.rows[0].n, 0);
    });

    it("a source role that may not read the table: the internal read (on the target role's session) is refused, nothing moves", async () => {
      await admin().query(`DROP ROLE IF EXISTS internal_reader; CREATE ROLE internal_reader LOGIN PASSWORD 'reader-pw'`);
      const url = new URL(live().pg.url);
      [url.username, url.password] = ['internal_reader', 'reader-pw'];
      try {
        // Before, the read ran with the target role's rights alone: a client named a table the source role could not read.
        const result = await withWorker(
          async ({ taskQueue }) => {
            const handle = await startExtraction(
              live().temporal.client,
              { table: source.table, target: { name: 'same', table: 'dsti.t', via: 'internal' } },
              { taskQueue },
            );
            return (await handle.result()) as ExtractionResult;
          },
          { targets: { same: live().pg.url }, sourceUrl: url.toString() },
        );
        assert.deepEqual([result.terminalReceipt.outcome, result.load?.reason], ['abort', 'SQLSTATE_42501']);
        assert.equal((await admin().query('SELECT count(*)::int AS n FROM dsti.t')).rows[0].n, 0);
      } finally {
        await admin().query('DROP ROLE internal_reader');
      }
    });

    it('a table with no columns moves its rows too', async () => {
      await admin().query('CREATE TABLE dsti.marks_src (); INSERT INTO dsti.marks_src SELECT FROM generate_series(1, 6); CREATE TABLE dsti.marks ()');
      const result = await loadInternally('dsti.marks_src', 'dsti.marks');
      assert.equal(result.terminalReceipt.outcome, 'success', JSON.stringify(result.load));
      assert.equal((await admin().query('SELECT count(*)::int AS n FROM dsti.marks')).rows[0].n, 6);
    });

    it('a GENERATED ALWAYS identity keeps the source ids (its sequence moved past them) and a generated column is computed by the target', async () => {
      const ddl = (name: string) => `CREATE TABLE dsti.${name} (id int GENERATED ALWAYS AS IDENTITY, qty int, twice int GENERATED ALWAYS AS (qty * 2) STORED)`;
      await admin().query(
        `${ddl('g_src')}; ${ddl('g')}; INSERT INTO dsti.g_src (id, qty) OVERRIDING SYSTEM VALUE SELECT 50 + g, g FROM generate_series(1, 5) g`,
      );
      const result = await loadInternally('dsti.g_src', 'dsti.g');
      assert.equal(result.terminalReceipt.outcome, 'success', JSON.stringify(result.load));
      const rows = (name: string) => admin().query(`SELECT id, qty, twice FROM dsti.${name} ORDER BY id`);
      assert.deepEqual((await rows('g')).rows, (await rows('g_src')).rows);
      assert.deepEqual((await admin().query('INSERT INTO dsti.g (qty) VALUES (1) RETURNING id')).rows, [{ id: 56 }], 'the identity moved past the ids copied');
    });

    it('target columns in another order: each column moves into the one of its name', async () => {
      await admin().query(
        `CREATE TABLE dsti.ord_src (id int, a text, b text); INSERT INTO dsti.ord_src VALUES (1, 'x', 'y'); CREATE TABLE dsti.ord (b text, id int, a text)`,
      );
      const result = await loadInternally('dsti.ord_src', 'dsti.ord');
      assert.equal(result.terminalReceipt.outcome, 'success', JSON.stringify(result.load));
      assert.deepEqual((await admin().query('SELECT id, a, b FROM dsti.ord')).rows, [{ id: 1, a: 'x', b: 'y' }]);
    });

    it('refuses a target in another database: abort with TARGET_NOT_SAME_DATABASE', async () => {
      await withWorker(
        async ({ taskQueue }) => {
          const handle = await startExtraction(
            live().temporal.client,
            { table: source.table, target: { name: 'warehouse', table: 'dst.t', via: 'internal' } },
            { taskQueue },
          );
          const result = (await handle.result()) as ExtractionResult;
          assert.deepEqual([result.load?.outcome, result.load?.reason], ['failed', 'TARGET_NOT_SAME_DATABASE']);
          assert.equal(result.terminalReceipt.outcome, 'abort');
        },
        { targets: { warehouse: targetUrl() } },
      );
    });
  });
});

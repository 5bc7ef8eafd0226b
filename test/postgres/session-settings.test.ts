/**
 * Exported text does not depend on the databases' own session defaults: a source and a target
 * database set to DateStyle 'SQL, DMY', IntervalStyle sql_standard, extra_float_digits 0,
 * bytea_output escape, TimeZone Asia/Kolkata, xmloption document and array_nulls off still give
 * ISO, hex, full-precision files split on the date key, and the built-in loader round-trips them
 * (an XML fragment and an array's NULL too) into a target database set the same way.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { Client } from 'pg';
import { reportCommit, startExtraction, waitForManifest } from '../../src/client';
import { type SessionRole, closeSession, openSession, requireSourceVersion } from '../../src/postgres/session';
import { ErrorCode } from '../../src/errors';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

const SOURCE_DB = 'hostile_settings_src';
const TARGET_DB = 'hostile_settings_dst';
const HOSTILE = `SET DateStyle = 'SQL, DMY'; SET IntervalStyle = 'sql_standard'; SET extra_float_digits = 0; SET bytea_output = 'escape'; SET TimeZone = 'Asia/Kolkata'; SET xmloption = 'document'; SET array_nulls = off`;
const TABLE_DDL = 'CREATE TABLE public.t (d date PRIMARY KEY, ts timestamptz, iv interval, f float8, b bytea, note text, x xml, ta text[])';
const ROWS = 1000;

function urlOf(database: string): string {
  const url = new URL(live().pg.url);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A test session with settings of its own choosing (the database's defaults are what is under test). */
async function on<T>(database: string, work: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({
    connectionString: urlOf(database),
    application_name: 'pg-extract-test',
    client_encoding: 'UTF8',
    options: '-c DateStyle=ISO -c xmloption=content',
  });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

async function hostileDatabase(database: string): Promise<void> {
  await admin().query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin().query(`CREATE DATABASE ${database}`);
  for (const set of HOSTILE.split(';')) await admin().query(`ALTER DATABASE ${database} ${set.trim()}`);
  await on(database, (c) => c.query(TABLE_DDL));
}

/** The rows as text, rendered in one transaction of a session that states every setting itself. */
async function rowsText(database: string): Promise<string[]> {
  return on(database, async (c) => {
    await c.query(
      `BEGIN; SET LOCAL DateStyle = 'ISO'; SET LOCAL IntervalStyle = 'postgres'; SET LOCAL extra_float_digits = 3; SET LOCAL bytea_output = 'hex'; SET LOCAL TimeZone = 'UTC'`,
    );
    const r = await c.query<{ row: string }>('SELECT t::text AS row FROM public.t ORDER BY d');
    await c.query('COMMIT');
    return r.rows.map((x) => x.row);
  });
}

describe('session settings are pinned, whatever the databases default to (live)', function () {
  this.timeout(120_000);
  before(async () => {
    await hostileDatabase(SOURCE_DB);
    await hostileDatabase(TARGET_DB);
    await on(SOURCE_DB, (c) =>
      c.query(
        `INSERT INTO public.t
           SELECT date '2024-01-01' + g, timestamptz '2024-01-01 00:00:00.123456+00' + g * interval '61 minutes', g * interval '1 day 1.5 seconds',
                  g / 3.0::float8, int4send(g), 'café ' || g, ('<a>' || g || '</a><b/>')::xml,
                  ARRAY[g::text, NULL]
             FROM generate_series(1, $1::int) g`,
        [ROWS],
      ),
    );
  });
  after(async () => {
    for (const database of [SOURCE_DB, TARGET_DB]) await admin().query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it("a session of ours pins them (money in the C locale, XML read as content, an array's NULL read as NULL), keeps TCP keepalives and the client connection check on, JIT and synchronized scans off", async () => {
    const session = await openSession(urlOf(SOURCE_DB), 'probe');
    try {
      const r = await session.query<{ name: string; setting: string }>(
        `SELECT name, setting FROM pg_settings WHERE name IN ('DateStyle', 'IntervalStyle', 'extra_float_digits', 'bytea_output', 'TimeZone', 'client_encoding',
           'tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'client_connection_check_interval', 'jit', 'synchronize_seqscans',
           'lc_monetary', 'xmloption', 'array_nulls') ORDER BY name`,
      );
      const checksClient = Number((await session.query('SHOW server_version_num')).rows[0].server_version_num) >= 140_000;
      assert.deepEqual(Object.fromEntries(r.rows.map((x) => [x.name, x.setting])), {
        DateStyle: 'ISO, MDY',
        IntervalStyle: 'postgres',
        extra_float_digits: '3',
        bytea_output: 'hex',
        TimeZone: 'UTC',
        client_encoding: 'UTF8',
        tcp_keepalives_idle: '10',
        tcp_keepalives_interval: '5',
        tcp_keepalives_count: '3',
        ...(checksClient ? { client_connection_check_interval: '5000' } : {}),
        jit: 'off',
        synchronize_seqscans: 'off',
        lc_monetary: 'C',
        xmloption: 'content',
        array_nulls: 'on',
      });
    } finally {
      await closeSession(session);
    }
  });

  it("a target session ends its transaction after 10 minutes idle (a stopped loader's locks and fence claim go); a source's keeps the database's (a Parquet file is uploaded inside the read's transaction)", async () => {
    const idleTimeout = async (role: 'target' | 'partition') => {
      const session = await openSession(urlOf(SOURCE_DB), role);
      try {
        return (await session.query<{ t: string }>(`SELECT setting AS t FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'`)).rows[0]!.t;
      } finally {
        await closeSession(session);
      }
    };
    assert.deepEqual([await idleTimeout('target'), await idleTimeout('partition')], ['600000', '0']);
  });

  it("a session that COPYs a source's rows to the worker drops a worker that stops reading after 10 minutes (tcp_user_timeout); no other does, since Linux then ends a silent host by it instead of by the keepalive count (25 s)", async () => {
    const userTimeout = async (role: SessionRole) => {
      const session = await openSession(urlOf(SOURCE_DB), role);
      try {
        return (await session.query<{ t: string }>(`SELECT setting AS t FROM pg_settings WHERE name = 'tcp_user_timeout'`)).rows[0]!.t;
      } finally {
        await closeSession(session);
      }
    };
    const roles: SessionRole[] = ['partition', 'whole-copy', 'stream', 'coordinator', 'target', 'probe'];
    const seen: string[] = [];
    for (const role of roles) seen.push(await userTimeout(role));
    assert.deepEqual(Object.fromEntries(roles.map((r, i) => [r, seen[i]])), {
      partition: '600000',
      'whole-copy': '600000',
      stream: '600000',
      coordinator: '0',
      target: '0',
      probe: '0',
    });
  });

  it('a source server older than PostgreSQL 14 is refused with SOURCE_VERSION_UNSUPPORTED (its partition catalog lacks inhdetachpending); this one opens', async () => {
    assert.throws(() => requireSourceVersion(130_015), {
      code: ErrorCode.SOURCE_VERSION_UNSUPPORTED,
      message: /PostgreSQL 13; pg-extract reads PostgreSQL 14 or newer/,
    });
    requireSourceVersion(140_000);
    const session = await openSession(urlOf(SOURCE_DB), 'coordinator');
    try {
      assert.ok(Number((await session.query('SHOW server_version_num')).rows[0].server_version_num) >= 140_000);
    } finally {
      await closeSession(session);
    }
  });

  it('files hold ISO dates, UTC timestamps, postgres intervals, full float8 precision and hex bytea, in UTF-8, split on the date key', async () => {
    await withWorker(
      async ({ client, taskQueue }) => {
        const handle = await startExtraction(client, { table: 'public.t', partitions: 3 }, { taskQueue });
        const manifest = await waitForManifest(handle);
        const first = await readFile(manifest.files[0]!.path, 'utf8');
        await reportCommit(client, handle.workflowId, { outcome: 'failed' });
        assert.equal(
          first.split('\n')[1],
          '2024-01-02,2024-01-01 01:01:00.123456+00,1 day 00:00:01.5,0.3333333333333333,\\x00000001,café 1,<a>1</a><b/>,"{1,NULL}"',
        );
        assert.deepEqual(
          manifest.files.map((f) => f.range.kind),
          ['key', 'key', 'key'],
          'split on the date key',
        );
      },
      { sourceUrl: urlOf(SOURCE_DB) },
    );
  });

  it('the built-in loader round-trips them into a target with the same settings', async () => {
    const result = await withWorker(
      async ({ client, taskQueue }) => {
        const handle = await startExtraction(
          client,
          { table: 'public.t', partitions: 3, target: { name: 'hostile', table: 'public.t', mode: 'append' } },
          { taskQueue },
        );
        return (await handle.result()) as ExtractionResult;
      },
      { sourceUrl: urlOf(SOURCE_DB), targets: { hostile: urlOf(TARGET_DB) } },
    );
    assert.equal(result.terminalReceipt.outcome, 'success', JSON.stringify(result.load));
    const source = await rowsText(SOURCE_DB);
    assert.equal(source.length, ROWS);
    assert.deepEqual(await rowsText(TARGET_DB), source, 'the target holds exactly the source rows');
  });

  it("a source's sessions read with an empty search_path, as pg_dump's: reg* values are written schema-qualified, and a function the database's path puts before pg_catalog is never called", async () => {
    // Before, set_config resolved to the planted one and every session failed; and the regclass was written as the bare `t`.
    await on(SOURCE_DB, (c) =>
      c.query(`CREATE SCHEMA trap;
        CREATE FUNCTION trap.set_config(text, text, boolean) RETURNS text LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'trap.set_config called'; END $$;
        CREATE TABLE public.regs (id int PRIMARY KEY, r regclass, f regproc); INSERT INTO public.regs VALUES (1, 'public.t', 'pg_catalog.now')`),
    );
    await admin().query(`ALTER DATABASE ${SOURCE_DB} SET search_path = trap, public, pg_catalog`);
    try {
      await withWorker(
        async ({ client, taskQueue }) => {
          for (const request of [{ table: 'public.regs', partitions: 2 }, { tables: ['public.regs', 'public.t'] }]) {
            const handle = await startExtraction(client, request, { taskQueue });
            const manifest = await waitForManifest(handle);
            const files = manifest.files.filter((f) => (f.table ?? 'public.regs') === 'public.regs');
            const rows = (await Promise.all(files.map((f) => readFile(f.path, 'utf8')))).flatMap((body) => body.trimEnd().split('\n').slice(1));
            await reportCommit(client, handle.workflowId, { outcome: 'failed' });
            assert.deepEqual(rows, ['1,public.t,now'], JSON.stringify(request));
          }
        },
        { sourceUrl: urlOf(SOURCE_DB) },
      );
    } finally {
      await admin().query(`ALTER DATABASE ${SOURCE_DB} RESET search_path`);
    }
  });
});

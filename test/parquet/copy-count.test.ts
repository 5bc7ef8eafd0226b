/**
 * A Parquet conversion compares DuckDB's rows with the COPY's own count (`COPY n`), which the server
 * sends after the rows' end and may reach the worker in a later read than it: the count is taken
 * once the query has ended, through a proxy that holds back everything after CopyDone.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveTable, selectSql, sourceColumns } from '../../src/postgres/catalog';
import { closeSession, openSession } from '../../src/postgres/session';
import { writeParquet } from '../../src/parquet/parquet-output';
import { LocalFileSink } from '../../src/storage/local-file-sink';
import { admin, settleSessions } from '../support/database';
import { type PgProxy, pgProxy } from '../support/pg-proxy';
import { live } from '../support/services';

/** CopyDone: 'c' and a length of 4. */
const COPY_DONE = Buffer.from([0x63, 0, 0, 0, 4]);

/** Forwards to `port`; the server's bytes after a CopyDone arrive `delayMs` later, in order. */
function holdingBackProxy(port: number, delayMs: number): Promise<PgProxy> {
  return pgProxy(port, (client, upstream) => {
    client.pipe(upstream);
    let held = Promise.resolve();
    upstream.on('data', (chunk: Buffer) => {
      const at = chunk.indexOf(COPY_DONE);
      const [now, later] = at < 0 ? [chunk, null] : [chunk.subarray(0, at + COPY_DONE.length), chunk.subarray(at + COPY_DONE.length)];
      held = held.then(() => void client.write(now));
      if (later) held = held.then(() => new Promise((r) => setTimeout(r, delayMs))).then(() => void client.write(later));
    });
    upstream.on('end', () => void held.then(() => client.end()));
  });
}

describe('Parquet row count (live PostgreSQL)', function () {
  this.timeout(60_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it("waits for the COPY's count when it arrives after the rows' end", async () => {
    await admin().query('DROP SCHEMA IF EXISTS pqcount CASCADE; CREATE SCHEMA pqcount; CREATE TABLE pqcount.t AS SELECT g AS id FROM generate_series(1, 5) g');
    const proxy = await holdingBackProxy(Number(new URL(live().pg.url).port), 300);
    const folder = await mkdtemp(join(tmpdir(), 'pgx-count-'));
    const url = new URL(live().pg.url);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const session = await openSession(url.toString(), 'partition');
    try {
      await session.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const table = await resolveTable(session, { schema: 'pqcount', table: 't' }, { readRows: true });
      const sink = new LocalFileSink(join(folder, 't.parquet'), 0o600, { directIo: false });
      const written = await writeParquet(session, selectSql(table), sourceColumns(table), { format: 'parquet', header: false, gzip: false }, sink, {});
      assert.equal(written.rows, 5);
    } finally {
      await closeSession(session);
      await proxy.close();
      await rm(folder, { recursive: true, force: true });
      await admin().query('DROP SCHEMA pqcount CASCADE');
    }
  });
});

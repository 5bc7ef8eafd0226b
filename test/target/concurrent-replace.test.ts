/**
 * Two runs that `replace` one target table at once (two schedules of one job overlapping, a run
 * started again while the first still loads): the table ends holding one run's rows, never both.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { Client } from 'pg';
import { FENCE_COLUMNS, type LoadFile, type LoadRequest, loadIntoTarget } from '../../src/target/loader';
import { admin } from '../support/database';
import { eventually } from '../support/eventually';
import { TARGET_DB, onTarget, recreateTarget, targetUrl } from './target-db';

const CSV_HEADER = 'id,name\n';

/** A CSV file of `ids`, each row named `name`. */
function file(ids: number[], name: string): LoadFile {
  const body = Buffer.from(CSV_HEADER + ids.map((id) => `${id},${name}\n`).join(''));
  return { path: `${name}.csv`, rows: ids.length, sha256: createHash('sha256').update(body).digest('hex'), open: async () => Readable.from([body]) };
}

async function targetSession(): Promise<Client> {
  const c = new Client({ connectionString: targetUrl(), application_name: 'pg-extract/target' });
  await c.connect();
  return c;
}

/** The advisory lock key the gate below waits on. */
const GATE = 4242;

/**
 * Makes the COMMIT of operation `operationId` wait until `open()`: a deferred trigger on the fence
 * row waits for an advisory lock the returned session holds. The load has done all its writes then.
 */
async function commitGate(operationId: string): Promise<{ open(): Promise<void> }> {
  await onTarget(async (c) => {
    await c.query(`CREATE SCHEMA IF NOT EXISTS pgextract`);
    await c.query(`CREATE TABLE IF NOT EXISTS pgextract.commit_fence (${FENCE_COLUMNS})`);
    await c.query(
      `CREATE FUNCTION public.gate() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF NEW.operation_id = '${operationId}' THEN PERFORM pg_advisory_xact_lock(${GATE}); END IF; RETURN NULL; END $$`,
    );
    await c.query(
      `CREATE CONSTRAINT TRIGGER gate AFTER INSERT ON pgextract.commit_fence DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.gate()`,
    );
  });
  const holder = new Client({ connectionString: targetUrl(), application_name: 'pg-extract-test' });
  await holder.connect();
  await holder.query(`SELECT pg_advisory_lock(${GATE})`);
  return { open: () => holder.end() };
}

/** Resolves once `n` sessions of ours on the target wait for a lock: on a relation or a transaction (`kinds`), or at the gate. */
function waiting(kinds: string[], what: string): Promise<unknown> {
  return eventually(
    async () =>
      (
        await admin().query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'pg-extract/target' AND wait_event_type = 'Lock' AND wait_event = ANY($2)`,
          [TARGET_DB, kinds],
        )
      ).rows[0].n > 0,
    what,
    { timeoutMs: 30_000, intervalMs: 20 },
  );
}

const names = async (): Promise<string[]> =>
  onTarget(async (c) => (await c.query<{ name: string }>('SELECT DISTINCT name FROM dst.r ORDER BY name')).rows.map((r) => r.name));

describe('two replace loads of one target table at once (live)', function () {
  this.timeout(120_000);
  beforeEach(() => recreateTarget(`CREATE SCHEMA dst; CREATE TABLE dst.r (id int, name text); INSERT INTO dst.r VALUES (0, 'old')`));

  const format = { format: 'csv' as const, header: true, gzip: false };
  for (const shape of ['a plain table', 'a table filled through staging'] as const) {
    it(`${shape}: the later load replaces the earlier one's rows, not only the rows before both`, async () => {
      if (shape === 'a table filled through staging') await onTarget((c) => c.query('CREATE RULE keep AS ON INSERT TO dst.r WHERE false DO INSTEAD NOTHING'));
      const [first, second] = [await targetSession(), await targetSession()];
      try {
        const gate = await commitGate('run-1');
        const request = (operationId: string, name: string, ids: number[]): LoadRequest => ({
          files: [file(ids, name)],
          format,
          schema: 'dst',
          table: 'r',
          columns: ['id', 'name'],
          mode: 'replace',
          operationId,
        });
        // The first has emptied the table and written its rows, and waits at its COMMIT.
        const one = loadIntoTarget(first, request('run-1', 'first', [1, 2, 3]));
        await waiting(['advisory'], 'the first load waits at its COMMIT');
        const two = loadIntoTarget(second, request('run-2', 'second', [4, 5]));
        await waiting(['relation', 'transactionid', 'tuple'], 'the second load waits for the first');
        await gate.open();
        assert.deepEqual(
          (await Promise.all([one, two])).map((r) => [r.status, r.rows]),
          [
            ['committed', 3],
            ['committed', 2],
          ],
        );
        assert.deepEqual(await names(), ['second'], "the table holds the last replace's rows alone");
      } finally {
        await Promise.all([first.end(), second.end()]);
      }
    });
  }
});

/**
 * A one-table `replace` empties its target with a DELETE, and a DELETE runs the ON DELETE action of
 * every foreign key that references the target: before, a replace of a parent table deleted every
 * row of a table referencing it ON DELETE CASCADE, and nulled the keys of one ON DELETE SET NULL,
 * and the load put back its own table's rows only. Such a key now refuses the replace, by every
 * path (files, stream, internal), before anything is deleted; a set that loads both tables empties
 * them together with its TRUNCATE.
 */
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';
import { runToResult } from '../support/worker';
import { lastAttempt, onTarget, orphanStagingTables, recreateTarget, targetUrl } from './target-db';

/** dst.parent as the source has it, with a table for each ON DELETE action that changes another table's rows, and rows in each. */
const TARGET_DDL = `CREATE SCHEMA dst;
  CREATE TABLE dst.parent (id int PRIMARY KEY, name text, up int REFERENCES dst.parent ON DELETE CASCADE);
  CREATE TABLE dst.lines (id int, parent_id int REFERENCES dst.parent ON DELETE CASCADE);
  CREATE TABLE dst.notes (id int, parent_id int REFERENCES dst.parent ON DELETE SET NULL);
  INSERT INTO dst.parent SELECT g, 'old', NULL FROM generate_series(1, 5) g;
  INSERT INTO dst.lines SELECT g, g FROM generate_series(1, 5) g; INSERT INTO dst.notes SELECT g, g FROM generate_series(1, 5) g`;

/** What the target holds: its parents' names, the lines, and the notes that still reference a parent. */
const targetState = (db: (sql: string) => Promise<{ rows: unknown[] }>, schema = 'dst') =>
  db(
    `SELECT (SELECT string_agg(DISTINCT name, ',') FROM ${schema}.parent) AS names, (SELECT count(*)::int FROM ${schema}.lines) AS lines,
            (SELECT count(parent_id)::int FROM ${schema}.notes) AS notes`,
  ).then((r) => r.rows[0]);
const UNTOUCHED = { names: 'old', lines: 5, notes: 5 };

describe("replace of a table other tables' foreign keys reference with ON DELETE actions (live)", function () {
  this.timeout(180_000);
  before(() =>
    admin().query(`DROP SCHEMA IF EXISTS casc CASCADE; CREATE SCHEMA casc;
      CREATE TABLE casc.parent (id int PRIMARY KEY, name text, up int); INSERT INTO casc.parent SELECT g, 'new', NULL FROM generate_series(1, 20) g;
      CREATE TABLE casc.lines (id int, parent_id int); INSERT INTO casc.lines SELECT g, g FROM generate_series(1, 8) g;
      CREATE TABLE casc.notes (id int, parent_id int)`),
  );
  after(() => admin().query('DROP SCHEMA IF EXISTS casc CASCADE'));
  beforeEach(() => recreateTarget(TARGET_DDL));
  afterEach(async () => {
    assert.equal(await orphanStagingTables(), 0, 'no staging table left');
    assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
  });

  const run = (request: Omit<ExtractionRequest, 'source'>, targets: Record<string, string>, onEnd?: (h: WorkflowHandle) => Promise<void>) =>
    runToResult(request, { targets }, onEnd);

  const refused = (result: ExtractionResult, parent = 'dst.parent'): void => {
    assert.deepEqual([result.terminalReceipt.outcome, result.load?.reason], ['abort', 'TARGET_REPLACE_CASCADES'], JSON.stringify(result.load));
    assert.equal(
      result.load?.message,
      `replace would empty ${parent} with a DELETE, which would delete or change rows of other tables through their foreign keys: ` +
        `${parent.replace('parent', 'lines')} (lines_parent_id_fkey ON DELETE CASCADE), ${parent.replace('parent', 'notes')} (notes_parent_id_fkey ON DELETE SET NULL)`,
    );
  };

  for (const via of ['files', 'stream'] as const) {
    it(`${via}: refused with TARGET_REPLACE_CASCADES naming each key, after one attempt; no row of any table deleted or changed`, async () => {
      const target = { name: 'w', table: 'dst.parent', mode: 'replace' as const, ...(via === 'stream' ? { via } : {}) };
      const result = await run({ table: 'casc.parent', target }, { w: targetUrl() }, async (h) =>
        assert.equal(await lastAttempt(h, via === 'files' ? 'loadTarget' : 'loadStream'), 1, 'a definite failure is not retried'),
      );
      refused(result);
      // Before: success, and dst.lines empty, every dst.notes key NULL.
      assert.deepEqual(await onTarget((c) => targetState((sql) => c.query(sql))), UNTOUCHED);
    });
  }

  it('internal: refused alike (source and target one database)', async () => {
    await admin().query(`DROP SCHEMA IF EXISTS dst CASCADE; ${TARGET_DDL}`);
    try {
      const result = await run(
        { table: 'casc.parent', target: { name: 'same', table: 'dst.parent', mode: 'replace', via: 'internal' } },
        { same: live().pg.url },
      );
      refused(result);
      assert.deepEqual(await targetState((sql) => admin().query(sql)), UNTOUCHED);
    } finally {
      await admin().query('DROP SCHEMA dst CASCADE');
    }
  });

  it('a key of the table itself, or one NO ACTION whose keys the loaded rows hold, does not refuse it; a set replace of all three tables empties them together', async () => {
    await onTarget((c) =>
      c.query('DROP TABLE dst.notes; ALTER TABLE dst.lines DROP CONSTRAINT lines_parent_id_fkey, ADD FOREIGN KEY (parent_id) REFERENCES dst.parent DEFERRABLE'),
    );
    const one = await run({ table: 'casc.parent', target: { name: 'w', table: 'dst.parent', mode: 'replace' } }, { w: targetUrl() });
    assert.equal(one.terminalReceipt.outcome, 'success', JSON.stringify(one.load));
    const counts = (sql: string) => onTarget(async (c) => (await c.query(sql)).rows[0]);
    assert.deepEqual(
      await counts(`SELECT (SELECT count(*)::int FROM dst.parent WHERE name = 'new') AS parents, (SELECT count(*)::int FROM dst.lines) AS lines`),
      {
        parents: 20,
        lines: 5,
      },
    );
    await recreateTarget(TARGET_DDL);
    const set = await run({ schema: 'casc', target: { name: 'w', schema: 'dst', mode: 'replace' } }, { w: targetUrl() });
    assert.equal(set.terminalReceipt.outcome, 'success', JSON.stringify(set.load));
    assert.deepEqual(await onTarget((c) => targetState((sql) => c.query(sql))), { names: 'new', lines: 8, notes: 0 });
  });
});

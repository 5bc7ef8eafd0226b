/**
 * The load requests' own checks, pure: binary files' column types come one per column, and an
 * earlier release's request (no columns, no types) still parses.
 */
import assert from 'node:assert/strict';
import { parseActivityRequest } from '../../src/contract/activity-requests';
import { loadTargetRequestSchema, loadTargetSetRequestSchema } from '../../src/contract/load-requests';
import { ErrorCode, PgExtractError } from '../../src/errors';

const file = { path: '/out/t.part-0000.pgcopy', rows: 3, sha256: 'a'.repeat(64) };
const format = { format: 'binary', header: false, gzip: false };
const one = { target: { name: 'warehouse', table: 'dst.t', mode: 'append' }, files: [file], format, operationId: 'op' };
const set = { target: { name: 'warehouse', mode: 'append', schema: 'dst' }, files: [{ ...file, table: 'src.t' }], format, operationId: 'op' };

const refused = (run: () => unknown): void =>
  assert.throws(run, (err: unknown) => err instanceof PgExtractError && err.code === ErrorCode.INPUT_INVALID && /columnTypes/.test(err.message));

describe('load requests', () => {
  it('one table: types one per column parse; more or fewer, or types without columns, are INPUT_INVALID', () => {
    const parsed = parseActivityRequest(loadTargetRequestSchema, { ...one, columns: ['id', 'v'], columnTypes: ['integer', 'bigint'] });
    assert.deepEqual(parsed.columnTypes, ['integer', 'bigint']);
    assert.deepEqual(parseActivityRequest(loadTargetRequestSchema, one).columnTypes, undefined, "an earlier release's request");
    refused(() => parseActivityRequest(loadTargetRequestSchema, { ...one, columns: ['id', 'v'], columnTypes: ['integer'] }));
    refused(() => parseActivityRequest(loadTargetRequestSchema, { ...one, columnTypes: ['integer'] }));
  });

  it("a set: each table's types one per column of that table", () => {
    const columns = { 'src.t': ['id', 'v'] };
    assert.deepEqual(parseActivityRequest(loadTargetSetRequestSchema, { ...set, columns, columnTypes: { 'src.t': ['integer', 'text'] } }).columnTypes, {
      'src.t': ['integer', 'text'],
    });
    refused(() => parseActivityRequest(loadTargetSetRequestSchema, { ...set, columns, columnTypes: { 'src.t': ['integer', 'text', 'date'] } }));
    refused(() => parseActivityRequest(loadTargetSetRequestSchema, { ...set, columns, columnTypes: { 'src.other': ['integer'] } }));
  });
});

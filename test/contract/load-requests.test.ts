/**
 * The load requests' own checks, pure: one table's binary column types come one per column, a
 * set names its data package, and an earlier release's request (no columns, no types) still parses.
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

  it("a set names its data package by path and sha256, its tables' columns being there; a sha256 that is not one is INPUT_INVALID", () => {
    const dataPackage = { path: '/out/run/attempt-1/datapackage.json', sha256: 'b'.repeat(64) };
    assert.deepEqual(parseActivityRequest(loadTargetSetRequestSchema, { ...set, dataPackage }).dataPackage, dataPackage);
    assert.throws(
      () => parseActivityRequest(loadTargetSetRequestSchema, { ...set, dataPackage: { ...dataPackage, sha256: 'not hex' } }),
      (err: unknown) => err instanceof PgExtractError && err.code === ErrorCode.INPUT_INVALID && /dataPackage/.test(err.message),
    );
  });
});

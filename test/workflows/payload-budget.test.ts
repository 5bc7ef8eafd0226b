/**
 * The payload budget of a run's manifest and result, pure: a manifest the size of the 2,000-table
 * live test's fits, and a set's result leaves files[] out; a one-table result keeps files[] while it
 * fits and leaves it out when only that makes it fit; past the budget the attempt fails with
 * RUN_EXCEEDS_PAYLOAD_LIMIT (before any commit decision, see extract-or-load.ts).
 */
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import type { ExtractionInput } from '../../src/contract/extraction-input';
import type { Manifest } from '../../src/contract/extraction-types';
import type { ExtractionLifecycleReceipt } from '../../src/lifecycle/receipt';
import { PAYLOAD_BUDGET_BYTES } from '../../src/contract/payload-limit';
import { manifestInResult, requireFilesFit, requireManifestFits, requirePlanFits } from '../../src/workflows/payload-budget';

const set = { tables: ['s.a', 's.b'] } as ExtractionInput;
const one = { table: 's.a' } as ExtractionInput;

/** A manifest of `n` files whose paths are `pathBytes` long, shaped as runs write them. */
function manifestOf(n: number, pathBytes = 150): Manifest {
  const sha256 = 'f'.repeat(64);
  const path = (i: number) => `/out/${'d'.repeat(pathBytes - 30)}/s.t${i}.part-0000.csv`.padEnd(pathBytes, 'x');
  const files = Array.from({ length: n }, (_, i) => ({
    path: path(i),
    table: `s.t${i}`,
    etag: null,
    partition: 0,
    range: { kind: 'all' as const },
    backendPid: 12345,
    snapshotDigest: sha256,
    rows: 1000,
    bytes: 123456,
    sha256,
    name: path(i).slice(5),
  }));
  const evidence = files.map((f) => ({ name: f.name, rows: f.rows, bytes: f.bytes, sha256 }));
  return {
    workflowId: 'wf',
    table: 's.*',
    attempt: 1,
    strategy: 'partitioned_copy',
    coordinatorPid: 1,
    snapshotDigest: sha256,
    files,
    totals: { rows: 1000 * n, bytes: 123456 * n },
    columns: null,
    primaryKey: null,
    dataPackage: null,
    extractionReceipt: { status: 'completed', evidence } as unknown as ExtractionLifecycleReceipt,
  } as Manifest;
}

const tooLarge = (err: unknown) => err instanceof ApplicationFailure && err.type === 'RUN_EXCEEDS_PAYLOAD_LIMIT' && err.nonRetryable;

describe('payload budget', () => {
  it("a set of 2,000 files with the live test's paths fits, its result without files[]", () => {
    const manifest = manifestOf(2000);
    assert.ok(JSON.stringify(manifest).length > 1_000_000, 'a realistic size');
    requireManifestFits(manifest);
    assert.deepEqual(manifestInResult(set, manifest).files, []);
    assert.equal(manifestInResult(set, manifest).filesInResult, false);
  });

  it('a one-table result keeps files[] while it fits, and leaves it out when only that makes it fit', () => {
    const small = manifestOf(100);
    assert.equal(manifestInResult(one, small), small);
    const big = manifestOf(2000);
    requireManifestFits(big);
    assert.equal(manifestInResult(one, big).filesInResult, false);
  });

  it('a manifest or result past the budget fails the attempt with RUN_EXCEEDS_PAYLOAD_LIMIT, not retried', () => {
    assert.throws(() => requireManifestFits(manifestOf(4000)), tooLarge);
    // Long paths (a long --out) reach it with fewer files.
    assert.throws(() => requireManifestFits(manifestOf(1500, 700)), tooLarge);
    assert.throws(() => requireFilesFit(manifestOf(4000).files, manifestOf(4000).extractionReceipt!.evidence), tooLarge);
    assert.ok(PAYLOAD_BUDGET_BYTES < 2 * 1024 * 1024);
  });

  it('a plan whose file names alone cannot fit fails before anything is copied; one that may fit goes on', () => {
    const names = (n: number) => manifestOf(n).files.map((f) => f.name);
    requirePlanFits(names(2000));
    // Where the plan passes, the files may still outgrow the budget once copied (requireFilesFit then says so) ...
    requirePlanFits(names(3000));
    assert.throws(() => requireFilesFit(manifestOf(3000).files, manifestOf(3000).extractionReceipt!.evidence), tooLarge);
    // ... but a plan the check refuses is one whose files could never fit.
    assert.throws(() => requirePlanFits(names(6000)), tooLarge);
    assert.throws(() => requireFilesFit(manifestOf(6000).files, manifestOf(6000).extractionReceipt!.evidence), tooLarge);
  });
});

/**
 * Hostile commit reports at a live run awaiting commit: fuzzed `targetCommit` signals and `commit`
 * updates (inherited property names, wrong types, huge strings, extra and prototype keys) must
 * neither decide the run nor fail a workflow task; a valid report afterwards still decides it.
 */
import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import fc from 'fast-check';
import { reportCommit, startExtraction, waitForManifest } from '../../src/client';
import { ErrorCode, PgExtractError } from '../../src/errors';
import { commitUpdate, targetCommitSignal } from '../../src/contract/definitions';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { seedMixedTable, settleSessions } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';

const INHERITED = Object.getOwnPropertyNames(Object.prototype);
const OUTCOMES = ['committed', 'failed', 'unknown'];

const huge = fc.integer({ min: 10_000, max: 60_000 }).map((n) => 'committed'.padEnd(n, 'x'));
const hostileString = fc.oneof(fc.constantFrom(...INHERITED), fc.constantFrom(...OUTCOMES), fc.string(), huge);
const hostileValue = fc.oneof(hostileString, fc.anything(), fc.constant(null), fc.array(fc.constantFrom(...OUTCOMES, ...INHERITED)));
/** Objects that look like reports: right and wrong outcomes and ids, inherited names as keys, extra keys. */
const reportLike = fc
  .record(
    {
      outcome: hostileValue,
      operationId: fc.oneof(fc.string({ maxLength: 200 }), fc.string({ minLength: 201, maxLength: 400 }), huge, hostileValue),
      extra: fc.dictionary(fc.constantFrom(...INHERITED, 'extra', 'Outcome'), hostileValue, { maxKeys: 2 }),
    },
    { requiredKeys: [] },
  )
  .map(({ extra, ...report }) => ({ ...report, ...extra }));
/** `__proto__` and `constructor` as own keys, as JSON.parse makes them on the worker. */
const ownPrototypeKeys = fc
  .tuple(fc.constantFrom('__proto__', 'constructor', 'toString'), fc.constantFrom(...OUTCOMES), fc.anything())
  .map(([key, outcome, value]) => JSON.parse(`{"outcome":"${outcome}","${key}":${JSON.stringify(value) ?? 'null'}}`) as unknown);
const payload = fc.oneof(fc.constant(undefined), fc.anything(), fc.double(), fc.string(), huge, hostileValue, reportLike, ownPrototypeKeys);

/** What the workflow receives: the JSON payload converter's round trip. */
const onTheWire = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/** The contract, written independently of the product: a plain object with only these own keys and values. */
function isValidReport(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const { outcome, operationId } = v as Record<string, unknown>;
  const keys = Object.keys(v);
  return (
    keys.every((k) => k === 'outcome' || k === 'operationId') &&
    keys.includes('outcome') &&
    OUTCOMES.includes(outcome as string) &&
    // At most 200 characters, counted in code points.
    (!keys.includes('operationId') || (typeof operationId === 'string' && [...operationId].length <= 200))
  );
}

const hostile = fc.record({ via: fc.constantFrom('signal', 'update'), report: payload }).filter(({ report }) => !isValidReport(onTheWire(report)));

function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('hostile commit reports (live)', function () {
  this.timeout(120_000);
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  it('fuzzed signals are ignored and fuzzed updates rejected; no workflow task fails; a valid report still decides', async () => {
    const table = await seedMixedTable('hostile', 2_000);
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { table, partitions: 2 }, { taskQueue });
      try {
        const manifest = await waitForManifest(handle);
        await fc.assert(
          fc.asyncProperty(hostile, async ({ via, report }) => {
            if (via === 'signal') return handle.signal(targetCommitSignal, report as never);
            await assert.rejects(within(10_000, handle.executeUpdate(commitUpdate, { args: [report as never] }), 'a hostile update'), (err: Error) => {
              assert.equal((err.cause as { type?: string } | undefined)?.type, ErrorCode.INPUT_INVALID, err.message);
              return true;
            });
          }),
          {
            numRuns: 150,
            endOnFailure: true,
            // The reported wedge first: inherited property names as outcome.
            examples: [
              [{ via: 'update', report: { outcome: 'constructor' } }],
              [{ via: 'signal', report: { outcome: 'toString' } }],
              [{ via: 'signal', report: { outcome: '__proto__' } }],
            ],
          },
        );
        const receipt = await within(
          30_000,
          handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed', operationId: 'op-after-fuzz' }] }),
          'the valid update',
        );
        assert.equal(receipt.outcome, 'abort');
        assert.equal(receipt.cleanupSucceeded, true);
        const result = (await handle.result()) as ExtractionResult;
        assert.deepEqual(result.terminalReceipt, receipt);
        assert.equal(result.operationId, 'op-after-fuzz');
        for (const f of manifest.files) await assert.rejects(access(f.path), 'files of the aborted run are deleted');
      } finally {
        const events = (await handle.fetchHistory()).events ?? [];
        if ((await handle.describe()).status.name === 'RUNNING') await handle.terminate('wedged by a hostile report');
        assert.deepEqual(
          events.filter((e) => e.workflowTaskFailedEventAttributes).map((e) => e.workflowTaskFailedEventAttributes?.failure?.message),
          [],
        );
      }
    });
  });

  const badReports: [string, unknown, string][] = [
    ['an inherited outcome', { outcome: 'constructor' }, 'outcome'],
    ['an own __proto__ key', JSON.parse('{"outcome":"committed","__proto__":{"outcome":"committed"}}'), 'input'],
    ['an operation id of 201 characters', { outcome: 'committed', operationId: 'x'.repeat(201) }, 'operationId'],
    ['an extra key', { outcome: 'committed', note: 'x' }, 'input'],
    ['an array', ['committed'], 'input'],
  ];
  for (const [what, report, field] of badReports) {
    it(`reportCommit refuses ${what} with INPUT_INVALID before touching the run`, async () => {
      // No such run: asking the server about it would fail with field `workflowId` instead.
      await assert.rejects(reportCommit(live().temporal.client, `hostile-${Math.random().toString(36).slice(2)}`, report as never), (err: unknown) => {
        assert.ok(err instanceof PgExtractError, String(err));
        assert.equal(err.code, ErrorCode.INPUT_INVALID);
        assert.equal(err.field, field);
        return true;
      });
    });
  }
});

/** The worker registers the search attributes it upserts when a namespace lacks them (a bare start-dev). */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { msToTs } from '@temporalio/common/lib/time';
import { ensureSearchAttributes } from '../../src/worker/search-attributes';
import { SearchAttributes } from '../../src/contract/definitions';
import { live } from '../support/services';
import { eventually } from '../support/eventually';

describe('search attribute registration (live)', function () {
  this.timeout(60_000);

  it('adds the missing attributes to a fresh namespace once, and nothing the second time', async () => {
    const { connection } = live().temporal;
    const namespace = `bare-${randomUUID().slice(0, 8)}`;
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    // A new namespace takes a moment to become visible to the operator service.
    let last: unknown;
    const registered = (): Promise<string[] | undefined> =>
      ensureSearchAttributes(connection, namespace).catch((err: unknown) => {
        last = err;
        return undefined;
      });
    const added = await eventually(registered, () => `the search attributes were registered (last error: ${String(last)})`, {
      timeoutMs: 20_000,
      intervalMs: 250,
    });
    assert.deepEqual(
      added.sort(),
      Object.values(SearchAttributes)
        .map((k) => k.name)
        .sort(),
    );
    assert.deepEqual(await ensureSearchAttributes(connection, namespace), []);
  });
});

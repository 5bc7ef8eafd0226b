/** An activity's failure names the range a copy was reading, once: not again where its words name the table already. */
import assert from 'node:assert/strict';
import type { ClientBase } from 'pg';
import { ApplicationFailure } from '@temporalio/common';
import { toActivityFailure } from '../../src/activities/failures';
import { lockTimeoutError } from '../../src/postgres/lock-blockers';
import { PgExtractError } from '../../src/errors';

const range = { table: { schema: 'sales', table: 'orders' }, partition: 3 };

describe('activity failures name the range read', () => {
  it('words that name no table get the range in front', () => {
    const failure = toActivityFailure(Object.assign(new Error('division by zero'), { code: '22012' }), range) as ApplicationFailure;
    assert.equal(failure.message, 'sales.orders (partition 3): division by zero');
  });

  it('a lock timeout, which names its table quoted as the server was given it, is not prefixed with that name again', async () => {
    // No pg_locks to read here: the message still names the table it could not lock.
    const client = { query: async () => Promise.reject(new Error('no server')) } as unknown as ClientBase;
    const err = await lockTimeoutError(client, { code: '55P03' }, [range.table], 1000);
    assert.ok(err instanceof PgExtractError);
    assert.match(err.message, /^could not get ACCESS SHARE on "sales"\."orders" within 1000 ms/);
    assert.equal((toActivityFailure(err, range) as ApplicationFailure).message, err.message);
    // Named as a user types it, likewise.
    const typed = new PgExtractError(err.code, 'sales.orders: column d (date) holds ±infinity');
    assert.equal((toActivityFailure(typed, range) as ApplicationFailure).message, typed.message);
  });
});

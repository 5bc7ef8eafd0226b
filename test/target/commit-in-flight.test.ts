/**
 * A COMMIT still landing when its acknowledgement is lost: a deferred constraint trigger on the
 * target table sleeps inside COMMIT while the test destroys the client's socket. The backend goes
 * on committing (or failing) after that, so reconcile must wait for the transaction's fate
 * instead of reading the fence too early.
 */
import assert from 'node:assert/strict';
import type { Client } from 'pg';
import { closeSession, openSession } from '../../src/postgres/session';
import { CommitUnacknowledged, fencedTransaction, reconcileCommit } from '../../src/target/loader';
import { settleSessions } from '../support/database';
import { onTarget, recreateTarget, targetStatement, targetUrl } from './target-db';

const SLEEP_S = 3;

/** A trigger that runs at COMMIT, sleeps, and then lets the COMMIT through (`pass`) or fails it (`raise`). */
const slowTriggerDdl = (key: boolean) => `
  CREATE SCHEMA dst; CREATE TABLE dst.t (id int${key ? ' PRIMARY KEY' : ''});
  CREATE FUNCTION dst.slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_sleep(${SLEEP_S});
    IF TG_ARGV[0] = 'raise' THEN RAISE EXCEPTION 'refused at commit'; END IF;
    RETURN NULL;
  END $$;`;

async function withTrigger(behaviour: 'pass' | 'raise', key = false): Promise<void> {
  await recreateTarget(
    `${slowTriggerDdl(key)} CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON dst.t DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION dst.slow_commit('${behaviour}')`,
  );
}

async function openTarget(): Promise<Client> {
  return openSession(targetUrl(), 'target');
}

const insertOne = (client: Client) => async (): Promise<number> => {
  await client.query('INSERT INTO dst.t VALUES (1)');
  return 1;
};

/** Runs one fenced insert and destroys the client's socket while its COMMIT runs on the server. */
async function commitWithLostAck(operationId: string): Promise<unknown> {
  const client = await openTarget();
  try {
    const pid: number = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const cut = targetStatement('COMMIT', { pid }).then(() => client.connection.stream.destroy());
    const outcome = await fencedTransaction(client, operationId, 'sha256:d', 'dst.t', insertOne(client)).then(
      () => assert.fail('the COMMIT acknowledgement was not lost'),
      (err: unknown) => err,
    );
    await cut;
    return outcome;
  } finally {
    await closeSession(client);
  }
}

const targetRows = async (): Promise<number> => onTarget(async (c) => (await c.query('SELECT count(*)::int AS n FROM dst.t')).rows[0].n);

describe('reconciling a COMMIT whose acknowledgement was lost while it was still running (live)', function () {
  this.timeout(60_000);
  afterEach(async () => assert.deepEqual(await settleSessions(SLEEP_S * 2000), [], 'no session of ours is left'));

  it('waits for the transaction and reports committed when the COMMIT lands after the cut', async () => {
    await withTrigger('pass');
    const err = await commitWithLostAck('op-pass');
    assert.ok(err instanceof CommitUnacknowledged);
    const started = Date.now();
    assert.equal(await reconcileCommit(openTarget, { operationId: 'op-pass', digest: 'sha256:d', xid: err.xid }), 'committed');
    assert.ok(Date.now() - started > 500, 'it waited for the transaction');
    assert.equal(await targetRows(), 1);
  });

  it('waits for the transaction and reports not committed when the COMMIT fails after the cut', async () => {
    await withTrigger('raise');
    const err = await commitWithLostAck('op-raise');
    assert.ok(err instanceof CommitUnacknowledged);
    const started = Date.now();
    assert.equal(await reconcileCommit(openTarget, { operationId: 'op-raise', digest: 'sha256:d', xid: err.xid }), 'not_committed');
    assert.ok(Date.now() - started > 500, 'it waited for the transaction');
    assert.equal(await targetRows(), 0);
  });

  it('a COMMIT the server refuses is its own error, not a lost acknowledgement, and nothing commits', async () => {
    await withTrigger('raise');
    const client = await openTarget();
    try {
      await assert.rejects(fencedTransaction(client, 'op-refused', 'sha256:d', 'dst.t', insertOne(client)), (err: unknown) => {
        assert.ok(!(err instanceof CommitUnacknowledged));
        assert.equal((err as { code?: string }).code, 'P0001');
        assert.match((err as Error).message, /refused at commit/);
        return true;
      });
    } finally {
      await closeSession(client);
    }
    assert.equal(await targetRows(), 0);
    assert.equal(
      await onTarget(async (c) => (await c.query(`SELECT count(*)::int AS n FROM pgextract.commit_fence WHERE operation_id = 'op-refused'`)).rows[0].n),
      0,
    );
  });

  it('a transaction still running when the wait runs out is unknown', async () => {
    await withTrigger('pass');
    const err = await commitWithLostAck('op-slow');
    assert.ok(err instanceof CommitUnacknowledged);
    assert.equal(await reconcileCommit(openTarget, { operationId: 'op-slow', digest: 'sha256:d', xid: err.xid }, 500), 'unknown');
  });

  for (const key of [false, true]) {
    it(`a retry racing a COMMIT still landing answers from the fence and writes nothing twice (${key ? 'a primary key and REPEATABLE READ by default: the retry waits at the fence, not at the key' : 'no key'})`, async () => {
      await withTrigger('pass', key);
      const [first, retry] = [await openTarget(), await openTarget()];
      try {
        // A target whose default is REPEATABLE READ: the fence's transaction is READ COMMITTED all the same.
        if (key) for (const c of [first, retry]) await c.query("SET default_transaction_isolation = 'repeatable read'");
        const firstPid: number = (await first.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        const landing = fencedTransaction(first, 'op-race', 'sha256:d', 'dst.t', insertOne(first));
        await targetStatement('COMMIT', { pid: firstPid });
        const retried = await fencedTransaction(retry, 'op-race', 'sha256:d', 'dst.t', insertOne(retry));
        assert.deepEqual(await landing, { status: 'committed', rows: 1, intentDigest: 'sha256:d' });
        assert.deepEqual(retried, { status: 'already_committed', rows: 1, intentDigest: 'sha256:d' }, 'the rows the fence recorded');
        assert.equal(await targetRows(), 1);
      } finally {
        await Promise.all([closeSession(first), closeSession(retry)]);
      }
    });
  }
});

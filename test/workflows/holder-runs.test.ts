/**
 * A worker's snapshot holds belong to the run that asks, not to the attempt key alone: a reset run
 * keeps its attempt keys (src/workflows/run-key.ts names them by the run it started as), while the
 * run it replaced may still hold that attempt on this worker until its hold hears it is gone. Two
 * runs holding one attempt key, against real PostgreSQL, each get their own snapshot, and one's
 * release or end leaves the other's hold, session and plan as they were.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createHolderActivities, SnapshotHolderRegistry } from '../../src/activities';
import { sourceUrl } from '../../src/config';
import type { SnapshotPlanView } from '../../src/contract/activity-requests';
import { parseExtractionInput } from '../../src/contract/extraction-input';
import { OutputStores } from '../../src/storage/output-stores';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';

/** The coordinator backends holding a snapshot now, in pid order. */
async function coordinators(): Promise<number[]> {
  const r = await admin().query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator' AND backend_xmin IS NOT NULL ORDER BY pid`,
  );
  return r.rows.map((row) => row.pid);
}

/** What the hold's activity returned once it ended; fails if it still holds after 5 s. */
function ended(hold: Hold): Promise<{ released: true }> {
  const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the hold did not end')), 5000).unref());
  return Promise.race([hold.holding, late]);
}

interface Hold {
  /** A new activity environment of this run (a cancellation reaches every activity run in one environment). */
  env(): MockActivityEnvironment;
  plan: SnapshotPlanView;
  /** The holdSnapshot activity, settled once its hold has ended. */
  holding: Promise<{ released: true }>;
  /** Cancels the holdSnapshot activity. */
  cancel(): void;
}

describe('snapshot holds of one attempt key in two runs (live)', function () {
  this.timeout(60_000);
  let registry: SnapshotHolderRegistry;
  let holder: ReturnType<typeof createHolderActivities>;
  const workflowId = `holder-runs-${randomUUID()}`;
  // Attempt keys name the run the workflow started as (held-snapshot.ts): a reset run's are its original run's.
  const original = randomUUID();
  const attemptKey = `${workflowId}/${original}/attempt-1`;

  before(async () => {
    await admin().query(`DROP SCHEMA IF EXISTS holdrun CASCADE; CREATE SCHEMA holdrun;
      CREATE TABLE holdrun.t (id int PRIMARY KEY); INSERT INTO holdrun.t SELECT generate_series(1, 1000)`);
  });
  beforeEach(() => {
    registry = new SnapshotHolderRegistry();
    const urls = (name: string): string => sourceUrl(name, { PG_EXTRACT_SOURCE_URL: live().pg.url });
    holder = createHolderActivities({ registry, sourceUrl: urls, stores: new OutputStores({ outputRoot: live().outRoot, fileMode: 0o600 }) });
  });
  /** Every hold a test started. One that failed midway leaves some open: they end before the check of what the test left. */
  let started: Pick<Hold, 'holding' | 'cancel'>[] = [];
  afterEach(async () => {
    for (const hold of started) hold.cancel();
    await Promise.allSettled(started.map((hold) => hold.holding));
    started = [];
    assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
  });

  /** Starts a hold of `attemptKey` as the run `runId` and waits for its plan. */
  async function holdAs(runId: string): Promise<Hold> {
    const env = () => new MockActivityEnvironment({ workflowExecution: { workflowId, runId } }, { logger: new DefaultLogger('ERROR') });
    const input = parseExtractionInput({ table: 'holdrun.t', partitions: 2 });
    const hold = env();
    // run() infers no result type: the activities' own.
    const holding = hold.run(holder.holdSnapshot, { attemptKey, input }) as ReturnType<typeof holder.holdSnapshot>;
    const cancel = () => hold.cancel();
    started.push({ holding, cancel });
    return { env, holding, cancel, plan: (await env().run(holder.awaitSnapshotPlan, attemptKey)) as SnapshotPlanView };
  }

  /** The run a reset replaced holds the attempt, then the reset run holds it too: two snapshots, apart. */
  async function replacedThenReset(): Promise<{ replaced: Hold; reset: Hold }> {
    const replaced = await holdAs(original);
    const reset = await holdAs(randomUUID());
    // Before, the reset run's hold took the replaced run's entry: it was handed the other run's plan (its partitions
    // would import that snapshot), a release ended both holds, and the replaced run's end closed the reset run's session.
    assert.notEqual(reset.plan.coordinatorPid, replaced.plan.coordinatorPid, "the reset run's plan is its own snapshot");
    assert.notEqual(reset.plan.snapshotId, replaced.plan.snapshotId);
    assert.deepEqual(
      await coordinators(),
      [replaced.plan.coordinatorPid, reset.plan.coordinatorPid].sort((a, b) => a! - b!),
    );
    assert.equal(registry.size, 2);
    return { replaced, reset };
  }

  it("the replaced run's hold ends (its heartbeat finds the run gone): the reset run's hold, session and plan stay", async () => {
    const { replaced, reset } = await replacedThenReset();
    replaced.cancel();
    await assert.rejects(ended(replaced), /cancel/i);
    assert.deepEqual(await coordinators(), [reset.plan.coordinatorPid]);
    assert.equal(registry.size, 1);
    assert.deepEqual(await reset.env().run(holder.awaitSnapshotPlan, attemptKey), reset.plan);
    await reset.env().run(holder.releaseSnapshot, attemptKey);
    assert.deepEqual(await ended(reset), { released: true });
    assert.equal(registry.size, 0);
  });

  it("the reset run releases the attempt (its copy failed): only its own hold ends, the replaced run's stays", async () => {
    const { replaced, reset } = await replacedThenReset();
    await reset.env().run(holder.releaseSnapshot, attemptKey);
    assert.deepEqual(await ended(reset), { released: true });
    assert.deepEqual(await coordinators(), [replaced.plan.coordinatorPid]);
    assert.deepEqual(await replaced.env().run(holder.awaitSnapshotPlan, attemptKey), replaced.plan);
    await replaced.env().run(holder.releaseSnapshot, attemptKey);
    assert.deepEqual(await ended(replaced), { released: true });
    assert.equal(registry.size, 0);
  });
});

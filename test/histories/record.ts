/**
 * Records the histories that test/workflows/replay.test.ts replays: representative runs of
 * extractionWorkflow (whole, partitioned, failed before its decision, snapshot lost and retried (a copy giving way to a migration too), loaded, a load refused or
 * cancelled (its fence asked too), cancelled (after a failed discard too), waiting for its commit, a standby's conflict while planning) and the batch
 * workflow of a table set. Run it only when a new shape of history is worth keeping — on the code
 * that is deployed, so later workflow changes are checked against what real runs recorded:
 *
 *   npm run record-histories -- -g '<the new case>'
 *
 * Record only the new case (`-g`): re-recording the others on new code would replace the histories
 * that pin older code, and the replay test would then prove nothing about them. Each history lands in test/histories/<name>.json as `{ workflowId, history }` (protobuf's own JSON form).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type WorkflowHandle, WorkflowUpdateStage } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate, manifestQuery, statusQuery, targetCommitSignal, terminalReceiptQuery } from '../../src/contract/definitions';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import { admin, lockAfterCoordinator, seedMixedTable, withMigrationGate } from '../support/database';
import { chattrWorks, failFirstDiscard } from '../support/failed-discard';
import { live } from '../support/services';
import { churning, startStandbyPair } from '../support/standby';
import { stoppingBatch } from '../support/stopping-batch';
import { withWorker } from '../support/worker';

const HERE = join(__dirname, '..', '..', '..', 'test', 'histories');

async function save(name: string, handle: WorkflowHandle): Promise<void> {
  const history = temporal.api.history.v1.History.fromObject(await handle.fetchHistory()).toJSON();
  writeFileSync(join(HERE, `${name}.json`), `${JSON.stringify({ workflowId: handle.workflowId, history }, null, 1)}\n`);
}

describe('record workflow histories', function () {
  this.timeout(120_000);
  let table: string;
  before(async () => {
    table = await seedMixedTable('hist', 20_000);
  });

  const run = (taskQueue: string, name: string, request: Omit<ExtractionRequest, 'table'>): Promise<WorkflowHandle> =>
    startExtraction(live().temporal.client, { table, ...request }, { taskQueue, workflowId: `history-${name}` });

  it('whole copy, committed by update', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await run(taskQueue, 'whole-committed', { partitions: 1 });
      await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed', operationId: 'op-1' }] });
      await handle.result();
      await save('whole-committed', handle);
    });
  });

  /** A run with its data package, committed by update, saved as `name`: what differs between these cases is the code that recorded them. */
  const committedWithPackage = (name: string, partitions: number) => async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await run(taskQueue, name, { partitions });
      assert.ok((await waitForManifest(handle)).dataPackage, 'a data package');
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      await save(name, handle);
    });
  };

  it('whole copy, its data package written on the stub that waits for a cancelled write, committed', committedWithPackage('whole-package-committed', 1));

  it('partitioned with its data package written, committed', committedWithPackage('data-package-committed', 2));

  // Recorded with the whole copy's folder prepared uncancellably ('whole-copy-folder-before-discard').
  it('one session, its folder prepared uncancellably, committed', committedWithPackage('one-session-uncancelled-prepare', 1));

  it(
    'partitioned, its folder prepared while the holder plans and its package written while the receipt completes, committed',
    committedWithPackage('folder-while-planning-committed', 2),
  );

  it('partitioned as batched files, committed', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await run(taskQueue, 'batched-committed', { partitions: 2, maxFileRows: 4_000 });
      assert.ok((await waitForManifest(handle)).files.length > 2, 'several files per partition');
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      await save('batched-committed', handle);
    });
  });

  it('partitioned, awaiting commit (a run still open), then failed by signal', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await run(taskQueue, 'partitioned-failed', { partitions: 3 });
      await waitForManifest(handle);
      await save('partitioned-awaiting-commit', handle);
      await handle.signal(targetCommitSignal, { outcome: 'failed' });
      await handle.result();
      await save('partitioned-failed', handle);
    });
  });

  // Recorded with the failed run's phase published ('failed-run-phase').
  it('a run that fails before its decision (a table that does not exist): phase failed', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(
        live().temporal.client,
        { table: 'public.no_such_table', partitions: 2 },
        { taskQueue, workflowId: 'history-failed-run-phase' },
      );
      await assert.rejects(handle.result());
      await save('failed-run-phase', handle);
    });
  });

  it('partitioned, no answer before the deadline: retained', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await run(taskQueue, 'deadline-retained', { partitions: 2, commitDeadlineMs: 1000 });
      await handle.result();
      await save('deadline-retained', handle);
    });
  });

  // Recorded with the input's numbers checked ('input-ranges') and the retained folder's sweep caught ('retain-sweep-caught').
  it('partitioned, no answer before the deadline: retained, its sweep caught', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await run(taskQueue, 'deadline-retained-sweep-caught', { partitions: 2, commitDeadlineMs: 1000 });
      await handle.result();
      await save('deadline-retained-sweep-caught', handle);
    });
  });

  // Recorded with the input's table names checked ('input-names').
  it('whole copy, its table names checked, committed by update', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await run(taskQueue, 'names-checked-committed', { partitions: 1 });
      await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      await save('names-checked-committed', handle);
    });
  });

  it('snapshot lost and retried from a fresh snapshot', async () => {
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await run(taskQueue, 'snapshot-lost', { partitions: 6 });
        for (let s = await handle.query(statusQuery); s.partitionsDone < 1; s = await handle.query(statusQuery)) await new Promise((r) => setTimeout(r, 10));
        await admin().query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg-extract/coordinator'`);
        const manifest = await waitForManifest(handle);
        assert.ok(manifest.attempt > 1, 'a second attempt');
        await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'unknown' }] });
        await handle.result();
        await save('snapshot-lost', handle);
      },
      { maxConcurrentActivities: 1 },
    );
  });

  it('a migration queued behind the holder: the partitions give way, the holder asked to let go at once, a fresh snapshot', async () => {
    await withMigrationGate(async ({ sourceUrl, migration, open }) => {
      await withWorker(
        async ({ taskQueue }) => {
          const handle = await run(taskQueue, 'gave-way', { partitions: 2, timeouts: { lockTimeoutMs: 1000, holderHeartbeatMs: 60_000 } });
          const { locked } = await lockAfterCoordinator(migration, table);
          open();
          await locked;
          await migration.query('COMMIT');
          const manifest = await waitForManifest(handle);
          assert.equal(manifest.attempt, 2, 'a second attempt');
          await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
          await handle.result();
          const events = (await handle.fetchHistory()).events ?? [];
          assert.ok(
            events.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'releaseSnapshot'),
            'the holder was asked to release',
          );
          await save('gave-way', handle);
        },
        { sourceUrl },
      );
    });
  });

  /** Cancels a run once it has copied a partition; the history is saved as `name`. */
  const cancelledWhileCopying = (name: string) => async () => {
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await run(taskQueue, name, { partitions: 6 });
        for (let s = await handle.query(statusQuery); s.partitionsDone < 1; s = await handle.query(statusQuery)) await new Promise((r) => setTimeout(r, 10));
        await handle.cancel();
        await handle.result().catch(() => undefined);
        const events = (await handle.fetchHistory()).events ?? [];
        assert.ok(
          events.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'releaseSnapshot'),
          'the holder was asked to release',
        );
        await save(name, handle);
      },
      { maxConcurrentActivities: 1 },
    );
  };
  it('cancelled while copying: the holder asked to release its snapshot at once', cancelledWhileCopying('cancelled-while-copying'));
  it('cancelled while copying, recorded as abort', cancelledWhileCopying('cancelled-while-copying-aborted'));

  // Recorded at ad5f923: a run cancelled while it extracts discards again the folder its first attempt's failed discard
  // left ('failed-run-discards-left'), and its abort receipt is that discard's report.
  it('a failed discard, then cancelled while extracting: that folder discarded again, recorded as abort', async () => {
    const name = 'cancelled-after-failed-discard';
    assert.ok(await chattrWorks(live().scratch), 'the output root takes the immutable flag (chattr), which fails the discard');
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await run(taskQueue, name, { partitions: 6 });
        await failFirstDiscard(handle, join(live().outRoot, `history-${name}`));
        await handle.cancel();
        await handle.result().catch(() => undefined);
        assert.equal(await handle.query(manifestQuery), null, 'cancelled while it extracted');
        const receipt = await handle.query(terminalReceiptQuery);
        assert.deepEqual([receipt?.outcome, receipt?.cleanupSucceeded], ['abort', true], 'the folder was discarded again');
        await save(name, handle);
      },
      { maxConcurrentActivities: 1 },
    );
  });

  it('loaded by the built-in loader', async () => {
    await admin().query(`CREATE TABLE hist.loaded (LIKE ${table})`);
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await run(taskQueue, 'loaded', { partitions: 2, target: { name: 'local', table: 'hist.loaded' } });
        await handle.result();
        await save('loaded', handle);
      },
      { targets: { local: live().pg.url } },
    );
  });

  it('streamed into the target with no files', async () => {
    await admin().query(`CREATE TABLE hist.streamed (LIKE ${table})`);
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await run(taskQueue, 'streamed', { partitions: 2, target: { name: 'local', table: 'hist.streamed', via: 'stream' } });
        await handle.result();
        await save('streamed', handle);
      },
      { targets: { local: live().pg.url } },
    );
  });

  it('partitioned, failed by a signal with an extra key (accepted before commit reports were strict)', async () => {
    await withWorker(async ({ taskQueue }) => {
      // A short deadline: code that ignores the signal ends the run as retained instead of waiting a day.
      const handle = await run(taskQueue, 'signal-with-extra-key', { partitions: 2, commitDeadlineMs: 10_000 });
      await waitForManifest(handle);
      await handle.signal(targetCommitSignal, { outcome: 'failed', operationId: 'op-1', note: 'an older target owner' } as never);
      await handle.result();
      await save('signal-with-extra-key', handle);
    });
  });

  it('a load the target refused (a value its column rejects): aborted', async () => {
    await admin().query(`CREATE TABLE hist.refusing (id bigint, name int, amount numeric(12,2), created timestamptz, flag boolean, doc jsonb)`);
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await run(taskQueue, 'load-aborted', { partitions: 2, target: { name: 'local', table: 'hist.refusing' } });
        await handle.result();
        await save('load-aborted', handle);
      },
      { targets: { local: live().pg.url } },
    );
  });

  /** A run loading into a table whose every value is checked slowly, cancelled once its COPY runs, saved as `name`. */
  const cancelledWhileLoading = (name: string) => async () => {
    await admin()
      .query(`CREATE OR REPLACE FUNCTION hist.slow_ok(text) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.002); RETURN true; END $$;
      DROP TABLE IF EXISTS hist.slow; DROP DOMAIN IF EXISTS hist.slow_text; CREATE DOMAIN hist.slow_text AS text CHECK (hist.slow_ok(VALUE));
      CREATE TABLE hist.slow (id bigint, name hist.slow_text, amount numeric(12,2), created timestamptz, flag boolean, doc jsonb)`);
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await run(taskQueue, name, {
          partitions: 2,
          target: { name: 'local', table: 'hist.slow' },
          timeouts: { loadHeartbeatMs: 2000 },
        });
        const copying = `SELECT 1 FROM pg_stat_activity WHERE application_name = 'pg-extract/target' AND query LIKE 'COPY%'`;
        while ((await admin().query(copying)).rowCount === 0) await new Promise((r) => setTimeout(r, 20));
        await handle.cancel();
        await handle.result().catch(() => undefined);
        await save(name, handle);
      },
      { targets: { local: live().pg.url } },
    );
  };

  it('cancelled while loading', cancelledWhileLoading('load-cancelled'));

  // Named apart from the case above, so that recording one never re-records the other.
  it('a load cancelled, its fence asked once it ended', cancelledWhileLoading('load-cancelled-fence-asked'));

  it('a set of tables at one snapshot, copied in a batch workflow, committed', async () => {
    await admin().query('CREATE TABLE hist.other (id int PRIMARY KEY); INSERT INTO hist.other SELECT generate_series(1, 10)');
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, { tables: [table, 'hist.other'] }, { taskQueue, workflowId: 'history-table-set-committed' });
      await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      await save('table-set-committed', handle);
    });
  });

  it('a set of small tables copied in groups, committed', async () => {
    await admin()
      .query(`CREATE TABLE hist.small_a (id int PRIMARY KEY); CREATE TABLE hist.small_b (id int PRIMARY KEY); CREATE TABLE hist.small_c (id int PRIMARY KEY);
      INSERT INTO hist.small_a SELECT generate_series(1, 10); INSERT INTO hist.small_b SELECT generate_series(1, 20); INSERT INTO hist.small_c SELECT generate_series(1, 30)`);
    await withWorker(async ({ taskQueue }) => {
      // Three small tables, two in flight: two groups, one of two tables.
      const request = { tables: ['hist.small_a', 'hist.small_b', 'hist.small_c'], maxInFlight: 2 };
      const handle = await startExtraction(live().temporal.client, request, { taskQueue, workflowId: 'history-table-groups-committed' });
      await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      await save('table-groups-committed', handle);
    });
  });

  /** A set of two tables with its data package, committed, saved as `name`: what differs between the cases is the code that recorded them. */
  const setWithPackage = (name: string) => async () => {
    await admin().query(
      'CREATE TABLE IF NOT EXISTS hist.pkg (id int PRIMARY KEY, note text); TRUNCATE hist.pkg; INSERT INTO hist.pkg SELECT g, g::text FROM generate_series(1, 10) g',
    );
    await withWorker(async ({ taskQueue }) => {
      const request = { tables: [table, 'hist.pkg'] };
      const handle = await startExtraction(live().temporal.client, request, { taskQueue, workflowId: `history-${name}` });
      assert.ok((await waitForManifest(handle)).dataPackage, 'the set has its data package');
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      await save(name, handle);
    });
  };

  it('a set whose data package is written in the held snapshot, committed', setWithPackage('table-set-package-committed'));
  it('a set whose data package is written beside the copy, committed', setWithPackage('table-set-package-beside-copy-committed'));

  // Recorded at d02b0f5: a set's markers for its payload budget and its discard after the copy, and a
  // cancellation once the commit was decided, which the run and the update both outlive.
  it('a set committed, then cancelled once decided', async () => {
    await admin().query(
      'CREATE TABLE IF NOT EXISTS hist.pkg (id int PRIMARY KEY, note text); TRUNCATE hist.pkg; INSERT INTO hist.pkg SELECT g, g::text FROM generate_series(1, 10) g',
    );
    await withWorker(async ({ taskQueue }) => {
      const request = { tables: [table, 'hist.pkg'] };
      const handle = await startExtraction(live().temporal.client, request, { taskQueue, workflowId: 'history-table-set-decided-then-cancelled' });
      await waitForManifest(handle);
      const update = await handle.startUpdate(commitUpdate, { args: [{ outcome: 'committed' }], waitForStage: WorkflowUpdateStage.ACCEPTED });
      await handle.cancel();
      assert.equal((await update.result()).outcome, 'success');
      await handle.result();
      await save('table-set-decided-then-cancelled', handle);
    });
  });

  it('a set of tables loaded by the built-in loader into a target schema', async () => {
    await admin().query(`
      DROP SCHEMA IF EXISTS histdst CASCADE; CREATE SCHEMA histdst;
      CREATE TABLE hist.lp (id int PRIMARY KEY); CREATE TABLE hist.lc (id int PRIMARY KEY, lp int REFERENCES hist.lp);
      INSERT INTO hist.lp SELECT generate_series(1, 10); INSERT INTO hist.lc SELECT g, 1 + g % 10 FROM generate_series(1, 30) g;
      CREATE TABLE histdst.lp (id int PRIMARY KEY); CREATE TABLE histdst.lc (id int PRIMARY KEY, lp int REFERENCES histdst.lp)`);
    await withWorker(
      async ({ taskQueue }) => {
        const request = { tables: ['hist.lp', 'hist.lc'], target: { name: 'local', schema: 'histdst' } };
        const handle = await startExtraction(live().temporal.client, request, { taskQueue, workflowId: 'history-table-set-loaded' });
        await handle.result();
        await save('table-set-loaded', handle);
      },
      { targets: { local: live().pg.url } },
    );
  });

  // Recorded at 0c1b015, where a conflict before the plan failed the run; later code loses the snapshot
  // instead (patched 'recovery-conflict-while-planning'), and must replay this the old way.
  it('a hot standby whose recovery conflicts end the holder while it plans (counting a slow view)', async () => {
    const pair = await startStandbyPair(`CREATE SCHEMA hs; CREATE TABLE hs.churn (id int PRIMARY KEY, n int); INSERT INTO hs.churn VALUES (1, 0);
      CREATE VIEW hs.slow AS SELECT g AS id FROM generate_series(1, 300) g WHERE pg_sleep(0.01) IS NOT NULL`);
    try {
      await churning(pair.primary.url, 'hs.churn', () =>
        withWorker(
          async ({ taskQueue }) => {
            const handle = await startExtraction(
              live().temporal.client,
              { tables: ['hs.slow'], maxSnapshotAttempts: 2 },
              { taskQueue, workflowId: 'history-recovery-conflict-while-planning' },
            );
            await assert.rejects(handle.result());
            await save('recovery-conflict-while-planning', handle);
          },
          { sourceUrl: pair.standby.url },
        ),
      );
    } finally {
      await pair.stop();
    }
  });

  // Recorded on 28d7bb7's workflow code: a batch workflow's own history. A parent's history holds only its
  // child's result, so without this a change to copyBatchWorkflow's commands would replay unchecked.
  it("a set copied by its batch workflow: one table alone, the small ones in groups (the batch workflow's history)", async () => {
    await admin().query(`
      CREATE TABLE IF NOT EXISTS hist.big (id int PRIMARY KEY, pad text); TRUNCATE hist.big;
      INSERT INTO hist.big SELECT g, repeat('x', 100) FROM generate_series(1, 100000) g;
      CREATE TABLE IF NOT EXISTS hist.small_a (id int PRIMARY KEY); CREATE TABLE IF NOT EXISTS hist.small_b (id int PRIMARY KEY);
      CREATE TABLE IF NOT EXISTS hist.small_c (id int PRIMARY KEY)`);
    await withWorker(async ({ taskQueue }) => {
      // hist.big (over 8 MB) is copied alone; three small tables, two in flight: two groups.
      const request = { tables: ['hist.big', 'hist.small_a', 'hist.small_b', 'hist.small_c'], maxInFlight: 2 };
      const handle = await startExtraction(live().temporal.client, request, { taskQueue, workflowId: 'history-copy-batch-parent' });
      await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      const events = (await handle.fetchHistory()).events ?? [];
      const childId = events.find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)?.startChildWorkflowExecutionInitiatedEventAttributes
        ?.workflowId;
      assert.ok(childId, 'the run started a batch workflow');
      const child = live().temporal.client.workflow.getHandle(childId);
      const activities = ((await child.fetchHistory()).events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
      assert.deepEqual([...new Set(activities)].sort(), ['copyPartition', 'copyTables'], 'a table copied alone and groups');
      await save('copy-batch', child);
    });
  });

  // Recorded at 63616e7: a copy that fails for good cancels the batch's other copy ('batch-stops-on-failure').
  it("a set whose failed copy stops its batch (the batch workflow's history)", async () => {
    const request = await stoppingBatch('hist_stop');
    await withWorker(async ({ taskQueue }) => {
      const handle = await startExtraction(live().temporal.client, request, { taskQueue, workflowId: 'history-batch-stopped-parent' });
      await assert.rejects(handle.result());
      const events = (await handle.fetchHistory()).events ?? [];
      const childId = events.find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)?.startChildWorkflowExecutionInitiatedEventAttributes
        ?.workflowId;
      assert.ok(childId, 'the run started a batch workflow');
      const child = live().temporal.client.workflow.getHandle(childId);
      assert.ok(
        ((await child.fetchHistory()).events ?? []).some((e) => e.activityTaskCancelRequestedEventAttributes),
        'the slow copy was cancelled',
      );
      await save('batch-stopped', child);
    });
  });

  // Recorded at 3516332: a set's folder prepared uncancellably ('folder-before-discard'), its plan weighed ('plan-budget') and waited for in the hold's scope ('plan-wait-with-hold').
  it('a set whose plan is weighed and waited for with its hold, committed', setWithPackage('table-set-plan-weighed-committed'));

  // Recorded on 28d7bb7's workflow code: a malformed signal on code whose commit reports are strict
  // (the 'strict-commit-signal' marker), ignored, then a commit by update.
  it('a malformed commit signal ignored, then committed by update', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await run(taskQueue, 'signal-malformed-then-committed', { partitions: 2 });
      await waitForManifest(handle);
      await handle.signal(targetCommitSignal, { outcome: 'failed', note: 'an extra key' } as never);
      const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed', operationId: 'op-2' }] });
      assert.equal(receipt.outcome, 'success', 'the signal was ignored');
      await handle.result();
      await save('signal-malformed-then-committed', handle);
    });
  });

  it('cancelled while awaiting commit', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await run(taskQueue, 'cancelled', { partitions: 2 });
      await waitForManifest(handle);
      await handle.cancel();
      await handle.result().catch(() => undefined);
      await save('cancelled', handle);
    });
  });
});

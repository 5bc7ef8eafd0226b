/**
 * Recorded histories replay on today's workflow code. Runs wait up to 30 days for their commit
 * report, so a worker deployed meanwhile must replay what older code recorded; a change to the
 * command sequence without `patched()` fails here. Histories come from test/histories/record.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { live } from '../support/services';

const FOLDER = join(__dirname, '..', '..', '..', 'test', 'histories');

function recorded(): { name: string; workflowId: string; history: temporal.api.history.v1.History }[] {
  return readdirSync(FOLDER)
    .filter((f) => f.endsWith('.json') && !f.startsWith('.'))
    .sort()
    .map((name) => {
      const { workflowId, history } = JSON.parse(readFileSync(join(FOLDER, name), 'utf8')) as { workflowId: string; history: object };
      return { name, workflowId, history: temporal.api.history.v1.History.fromObject(history) };
    });
}

describe('recorded histories replay on the current workflow code', function () {
  this.timeout(60_000);

  it('covers whole (with its data package too, and its folder prepared uncancellably), partitioned, failed before its decision, batched, awaiting commit, snapshot lost, loaded, cancelled (while copying too, and after a failed discard, which it discards again), retained (its sweep caught too), one with its table names checked, and streamed runs, a data package, a table set (loaded too, in groups, with its data package after or beside the copy, and cancelled once decided), the batch workflow of a set (and one stopped by a failed copy), a malformed commit signal ignored, a load cancelled with its fence asked, and a standby conflict while planning', () => {
    const names = recorded().map((h) => h.name);
    for (const name of [
      'batched-committed',
      'data-package-committed',
      'whole-committed',
      'whole-package-committed',
      'one-session-uncancelled-prepare',
      'partitioned-awaiting-commit',
      'partitioned-failed',
      'failed-run-phase',
      'snapshot-lost',
      'gave-way',
      'loaded',
      'cancelled',
      'cancelled-while-copying',
      'cancelled-while-copying-aborted',
      'cancelled-after-failed-discard',
      'deadline-retained',
      'deadline-retained-sweep-caught',
      'names-checked-committed',
      'streamed',
      'table-set-committed',
      'table-set-loaded',
      'table-groups-committed',
      'table-set-package-committed',
      'table-set-package-beside-copy-committed',
      'folder-while-planning-committed',
      'recovery-conflict-while-planning',
      'table-set-decided-then-cancelled',
      'copy-batch',
      'batch-stopped',
      'table-set-plan-weighed-committed',
      'signal-malformed-then-committed',
      'load-cancelled-fence-asked',
    ]) {
      assert.ok(names.includes(`${name}.json`), `${name}.json is recorded`);
    }
  });

  for (const { name, workflowId, history } of recorded()) {
    it(`${name} replays without a determinism violation`, async () => {
      await Worker.runReplayHistory({ workflowBundle: live().bundle }, history, workflowId);
    });
  }
});

/**
 * extractionWorkflow on a real Temporal server against real PostgreSQL: partitions over one
 * snapshot, the three terminal outcomes, the deadline, duplicate reports, cancellation.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { access, readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Client, WorkflowFailedError, type WorkflowHandle, WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { DefaultFailureConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { reportCommit, startExtraction, waitForManifest } from '../../src/client';
import { SearchAttributes, commitUpdate, statusQuery, targetCommitSignal, terminalReceiptQuery } from '../../src/contract/definitions';
import { type ExtractionRequest, parseExtractionInput } from '../../src/contract/extraction-input';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { runOutputs } from '../../src/contract/run-outputs';
import { admin, filesDigest, manifestDigest, seedMixedTable, settleSessions, tableDigest, zstdDecompressed } from '../support/database';
import { live } from '../support/services';
import { withWorker } from '../support/worker';
import { eventually } from '../support/eventually';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );

async function start(taskQueue: string, request: ExtractionRequest): Promise<WorkflowHandle> {
  return startExtraction(live().temporal.client, request, { taskQueue });
}

describe('extractionWorkflow (live Temporal + PostgreSQL)', function () {
  this.timeout(120_000);
  let table: string;
  let expected: { count: number; md5: string };

  before(async () => {
    table = await seedMixedTable('wf', 40_000);
    expected = await tableDigest(`SELECT * FROM ${table}`);
  });
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));

  for (const [report, outcome, kept] of [
    ['committed', 'success', false],
    ['failed', 'abort', false],
    ['unknown', 'retain_commit_unknown', true],
  ] as const) {
    it(`4 partitions end to end; target reports ${report} → ${outcome}, files ${kept ? 'retained' : 'deleted'}`, async () => {
      await withWorker(async ({ taskQueue }) => {
        const handle = await start(taskQueue, { table, partitions: 4 });
        const manifest = await waitForManifest(handle);
        assert.equal(manifest.files.length, 4);
        assert.deepEqual(await manifestDigest(table, manifest), expected, 'exact rows and checksum');
        assert.equal(new Set(manifest.files.map((f) => f.backendPid)).size, 4, 'four distinct sessions');
        assert.ok(!manifest.files.some((f) => f.backendPid === manifest.coordinatorPid));
        assert.ok(
          manifest.files.every((f) => f.snapshotDigest === manifest.snapshotDigest),
          'one snapshot seen by all',
        );
        assert.equal(manifest.extractionReceipt!.snapshotAuthority, 'postgresql.exported_snapshot');
        assert.equal((await handle.query(statusQuery)).phase, 'awaiting_commit');
        const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: report, operationId: 'op-1' }] });
        assert.equal(receipt.outcome, outcome);
        assert.equal(receipt.cleanupSucceeded, true);
        const result = (await handle.result()) as ExtractionResult;
        assert.deepEqual(result.terminalReceipt, receipt);
        assert.equal(result.operationId, 'op-1');
        assert.deepEqual(result.attempts, [{ attempt: 1, result: 'completed', reason: null, releasedFiles: 0, cleanupErrorCode: null }]);
        for (const f of manifest.files) assert.equal(await exists(f.path), kept);
        const released = runOutputs(manifest);
        assert.ok(released.includes(manifest.dataPackage!.path));
        assert.deepEqual([...receipt.filesRetained].sort(), kept ? released.sort() : []);
        assert.deepEqual([...receipt.filesDeleted].sort(), kept ? [] : released.sort(), 'the data package goes with the files');
        if (!kept) assert.equal(await exists(dirname(manifest.files[0]!.path)), false, 'empty output folder removed');
      });
    });
  }

  it("one partition runs the whole-COPY strategy: the transaction's own snapshot, one file", async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 1, commitDeadlineMs: 60_000 });
      const manifest = await waitForManifest(handle);
      assert.equal(manifest.strategy, 'whole_copy');
      assert.equal(manifest.extractionReceipt!.snapshotAuthority, 'postgresql.repeatable_read');
      assert.equal(manifest.extractionReceipt!.sourceToken, manifest.snapshotDigest);
      assert.deepEqual(await filesDigest(table, [manifest.files[0]!.path]), expected);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
    });
  });

  it('a whole copy writes the same bytes while another session is part-way through scanning the table (synchronized scans off)', async () => {
    // Over a quarter of shared_buffers (128 MB here), where a sequential scan joins one under way.
    await admin().query(`DROP SCHEMA IF EXISTS syncscan CASCADE; CREATE SCHEMA syncscan;
      CREATE TABLE syncscan.t (id int PRIMARY KEY, pad text);
      INSERT INTO syncscan.t SELECT g, repeat('x', 100) FROM generate_series(1, 400000) g;`);
    const digestOfCopy = async (taskQueue: string): Promise<string> => {
      const handle = await start(taskQueue, { table: 'syncscan.t', partitions: 1 });
      const manifest = await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      return manifest.files[0]!.sha256;
    };
    const scanner = await admin().connect();
    try {
      await withWorker(async ({ taskQueue }) => {
        const alone = await digestOfCopy(taskQueue);
        await scanner.query('BEGIN; DECLARE part_way CURSOR FOR SELECT * FROM syncscan.t');
        await scanner.query('FETCH 200000 FROM part_way');
        assert.equal(await digestOfCopy(taskQueue), alone);
      });
    } finally {
      await scanner.query('ROLLBACK');
      scanner.release();
      await admin().query('DROP SCHEMA syncscan CASCADE');
    }
  });

  for (const [format, gzip] of [
    ['binary', false],
    ['csv', true],
    ['binary', true],
  ] as const) {
    it(`writes ${format}${gzip ? ' + gzip' : ''} files that load back to the exact rows`, async () => {
      await withWorker(async ({ taskQueue }) => {
        const handle = await start(taskQueue, { table, partitions: 2, format, gzip });
        const manifest = await waitForManifest(handle);
        assert.ok(manifest.files.every((f) => f.path.endsWith(`${format === 'binary' ? '.pgcopy' : '.csv'}${gzip ? '.gz' : ''}`)));
        assert.deepEqual(await manifestDigest(table, manifest, { format, header: true, gzip }), expected);
        await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      });
    });
  }

  for (const format of ['csv', 'binary'] as const) {
    it(`writes ${format} + zstd files: receipts of the compressed bytes, zstd -d gives the plain run's bytes, and they load back`, async () => {
      await withWorker(async ({ taskQueue }) => {
        const plainHandle = await start(taskQueue, { table, partitions: 2, format });
        const plain = await waitForManifest(plainHandle);
        const handle = await start(taskQueue, { table, partitions: 2, format, compression: 'zstd' });
        const manifest = await waitForManifest(handle);
        assert.ok(manifest.files.every((f) => f.path.endsWith(`${format === 'binary' ? '.pgcopy' : '.csv'}.zst`)));
        assert.equal(manifest.files.length, plain.files.length);
        for (const [i, f] of manifest.files.entries()) {
          const stored = await readFile(f.path);
          assert.deepEqual({ bytes: f.bytes, sha256: f.sha256 }, { bytes: stored.length, sha256: sha256(stored) }, 'the receipt is of the bytes written');
          const restored = createHash('sha256');
          for await (const chunk of zstdDecompressed(f.path)) restored.update(chunk as Buffer);
          assert.equal(restored.digest('hex'), plain.files[i]!.sha256, `${f.path} decompresses to the plain run's file`);
        }
        const paths = manifest.files.map((f) => f.path);
        assert.deepEqual(await filesDigest(table, paths, { format, header: true, compression: 'zstd' }), expected);
        await Promise.all([plainHandle, handle].map((h) => h.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] })));
      });
    });
  }

  it('Web UI sees table, phase, rows and outcome as search attributes, and a summary', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 2 });
      await waitForManifest(handle);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
      await handle.result();
      const d = await handle.describe();
      assert.equal(d.typedSearchAttributes.get(SearchAttributes.table), table);
      assert.equal(d.typedSearchAttributes.get(SearchAttributes.phase), 'done');
      assert.equal(d.typedSearchAttributes.get(SearchAttributes.outcome), 'abort');
      assert.equal(d.typedSearchAttributes.get(SearchAttributes.rows), expected.count);
      assert.match((await d.staticSummary()) ?? '', new RegExp(`Extract ${table.replace('.', '\\.')}`));
      const listed = [];
      for await (const w of live().temporal.client.workflow.list({ query: `PgExtractTable = '${table}' AND PgExtractOutcome = 'abort'` }))
        listed.push(w.workflowId);
      assert.ok(listed.includes(handle.workflowId), 'searchable by table and outcome');
    });
  });

  it('a run that fails says so in its phase (status, Web UI details and search attribute), not the phase it failed in', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table: 'public.no_such_table_phase', partitions: 2 });
      await assert.rejects(handle.result(), WorkflowFailedError);
      assert.equal((await handle.describe()).typedSearchAttributes.get(SearchAttributes.phase), 'failed');
      assert.equal((await handle.query(statusQuery)).phase, 'failed');
    });
  });

  it('runs of one table started at once get workflow ids of their own', async () => {
    const handles = await Promise.all(Array.from({ length: 8 }, () => start('nobody-polls-ids', { table })));
    try {
      assert.equal(new Set(handles.map((h) => h.workflowId)).size, 8, handles.map((h) => h.workflowId).join(' '));
      for (const h of handles) assert.match(h.workflowId, new RegExp(`^pg-extract-${table.replace('.', '\\.')}-\\d{4}-.+-[0-9a-f]{6}$`));
    } finally {
      await Promise.all(handles.map((h) => h.terminate('test over')));
    }
  });

  it('no answer before the deadline → retain_commit_unknown, files kept as evidence', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 2, commitDeadlineMs: 1500 });
      const result = (await handle.result()) as ExtractionResult;
      assert.equal(result.terminalReceipt.outcome, 'retain_commit_unknown');
      assert.equal(result.terminalReceipt.cleanupAttempted, false);
      for (const f of result.manifest.files) assert.ok(await exists(f.path));
    });
  });

  it('a commit report after the deadline decided gets the receipt, and the result names no operation', async () => {
    const { run, taskQueue } = await withWorker(async ({ taskQueue }) => {
      const run = await start(taskQueue, { table, partitions: 2, commitDeadlineMs: 1000 });
      await waitForManifest(run);
      return { run, taskQueue };
    });
    // A worker with workflows and no activities: the run decides at its deadline and then waits in
    // cleaning_up for its sweep, so the report comes once the outcome is decided and before it is final.
    // It caches no run, so no task waits on a sticky queue of its own once it has stopped.
    const workflowsOnly = await Worker.create({
      connection: live().temporal.nativeConnection,
      taskQueue,
      workflowBundle: live().bundle,
      maxCachedWorkflows: 0,
    });
    const late = await workflowsOnly.runUntil(async () => {
      await eventually(async () => (await run.query(statusQuery).catch(() => null))?.phase === 'cleaning_up', 'the run decided at its deadline');
      return run.startUpdate(commitUpdate, { args: [{ outcome: 'committed', operationId: 'op-late' }], waitForStage: WorkflowUpdateStage.ACCEPTED });
    });
    await withWorker(
      async () => {
        const result = (await run.result()) as ExtractionResult;
        assert.equal(result.terminalReceipt.outcome, 'retain_commit_unknown');
        assert.deepEqual(await late.result(), result.terminalReceipt, "the late report gets the run's one receipt");
        assert.equal(result.operationId, null, 'the deadline decided: no report did');
      },
      { taskQueue },
    );
  });

  it('duplicate and concurrent signals and updates all get the first decision', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 2 });
      await waitForManifest(handle);
      const updates = [
        handle.executeUpdate(commitUpdate, { args: [{ outcome: 'unknown' }] }),
        handle.signal(targetCommitSignal, { outcome: 'committed' }).then(() => null),
        handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] }),
        handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] }),
      ];
      const receipts = (await Promise.all(updates)).filter((r) => r !== null);
      assert.equal(new Set(receipts.map((r) => JSON.stringify(r))).size, 1, 'one receipt for everyone');
      const result = (await handle.result()) as ExtractionResult;
      assert.deepEqual(result.terminalReceipt, receipts[0]);
    });
  });

  it("a targetCommit signal whose payload cannot be decoded (another client's encoding) is ignored: no workflow task fails, and a later report decides", async () => {
    await withWorker(async ({ client, taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 2 });
      await waitForManifest(handle);
      // A client whose payloads say json/plain and are not JSON, as another codec's or SDK's would be to ours.
      const encode = (text: string) => new TextEncoder().encode(text);
      const garbling = new Client({
        connection: client.connection,
        dataConverter: {
          payloadConverter: { toPayload: () => ({ metadata: { encoding: encode('json/plain') }, data: encode('{not json') }), fromPayload: () => undefined },
          failureConverter: new DefaultFailureConverter(),
          payloadCodecs: [],
        } as never,
      });
      await garbling.workflow.getHandle(handle.workflowId).signal(targetCommitSignal, { outcome: 'committed' });
      const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
      assert.equal(receipt.outcome, 'abort', 'the undecodable report decided nothing');
      const events = (await handle.fetchHistory()).events ?? [];
      assert.ok(
        events.some((e) => e.workflowExecutionSignaledEventAttributes),
        'the signal reached the run',
      );
      assert.ok(!events.some((e) => e.workflowTaskFailedEventAttributes), 'no workflow task failed');
    });
  });

  it('an update before extraction completes is rejected by the validator, writing nothing', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 2 });
      await assert.rejects(handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] }), (err: Error) => {
        assert.equal((err.cause as { type?: string }).type, 'NOT_AWAITING_COMMIT');
        return true;
      });
      // reportCommit passes the refusal on as it came, not as a closed run's answer.
      await assert.rejects(reportCommit(live().temporal.client, handle.workflowId, { outcome: 'committed' }), (err: Error) => {
        assert.ok(err instanceof WorkflowUpdateFailedError);
        assert.equal((err.cause as { type?: string }).type, 'NOT_AWAITING_COMMIT');
        return true;
      });
      await waitForManifest(handle);
      await assert.rejects(handle.executeUpdate(commitUpdate, { args: [{ outcome: 'bogus' as 'failed' }] }), (err: Error) => {
        assert.equal((err.cause as { type?: string }).type, 'INPUT_INVALID');
        return true;
      });
      const receipt = await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'failed' }] });
      assert.equal(receipt.outcome, 'abort');
      const events = (await handle.fetchHistory()).events ?? [];
      const commits = events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'commit');
      assert.equal(commits.length, 1, 'rejected updates left no trace in history');
    });
  });

  it('cancelling the workflow means abort: sessions closed, files deleted, the receipt read by query and by a late report', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 3 });
      const manifest = await waitForManifest(handle);
      await handle.cancel();
      await assert.rejects(handle.result(), WorkflowFailedError);
      for (const f of manifest.files) assert.equal(await exists(f.path), false);
      const history = await handle.fetchHistory();
      assert.ok(history.events?.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'releaseOutputs'));
      // Its result cannot be read, its receipt can: by query, and as the answer to a late report.
      const receipt = await handle.query(terminalReceiptQuery);
      assert.equal(receipt?.outcome, 'abort');
      assert.deepEqual([...(receipt?.filesDeleted ?? [])].sort(), runOutputs(manifest).sort(), 'every file of the run deleted');
      assert.deepEqual(await reportCommit(live().temporal.client, handle.workflowId, { outcome: 'committed' }), receipt);
    });
  });

  it('a cancellation once the outcome is decided changes nothing: the commit update gets its receipt and the run completes with it', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 8 });
      const manifest = await waitForManifest(handle);
      // Accepted means decided (the report is the first); the cancel lands while the files are released.
      const update = await handle.startUpdate(commitUpdate, { args: [{ outcome: 'committed' }], waitForStage: WorkflowUpdateStage.ACCEPTED });
      await handle.cancel();
      const receipt = await update.result();
      assert.equal(receipt.outcome, 'success');
      const result = (await handle.result()) as ExtractionResult;
      assert.deepEqual(result.terminalReceipt, receipt);
      for (const f of manifest.files) assert.equal(await exists(f.path), false);
    });
  });

  it("cancelling during extraction closes every session (the holder's with the run, not at its next heartbeat), leaves no file, and records abort", async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 4, outDir: 'cancel-early' });
      await eventually(async () => (await handle.query(statusQuery)).partitionsTotal > 0, 'the plan was handed out', { intervalMs: 20 });
      await handle.cancel();
      await assert.rejects(handle.result(), WorkflowFailedError);
      // The hold's heartbeats reach the server every 16 s (0.8 × holderHeartbeatMs); the run asks its holder to end instead.
      assert.deepEqual(await settleSessions(2000), [], 'the snapshot holder ended with the run');
      const folder = join(live().outRoot, 'cancel-early');
      const left = await readdir(folder, { recursive: true }).catch(() => []);
      assert.deepEqual(left, [], `left behind: ${left.join(', ')}`);
      // It recorded no outcome before: its receipt read null, its status and search attribute had none.
      const receipt = await handle.query(terminalReceiptQuery);
      assert.deepEqual(
        { ...receipt, decidedAt: typeof receipt?.decidedAt },
        {
          outcome: 'abort',
          decidedAt: 'string',
          cleanupAttempted: true,
          cleanupSucceeded: true,
          cleanupErrorCode: null,
          filesDeleted: [],
          filesRetained: [],
        },
      );
      assert.deepEqual(
        [(await handle.query(statusQuery)).outcome, (await handle.describe()).typedSearchAttributes.get(SearchAttributes.outcome)],
        ['abort', 'abort'],
      );
      assert.deepEqual(await reportCommit(live().temporal.client, handle.workflowId, { outcome: 'committed' }), receipt);
    });
  });

  it('the workflow history never contains the source password', async () => {
    const url = new URL(live().pg.url);
    url.password = 'hunter2-do-not-leak';
    await withWorker(
      async ({ taskQueue }) => {
        const handle = await start(taskQueue, { table, partitions: 2, commitDeadlineMs: 1000 });
        await handle.result();
        const history = JSON.stringify(await handle.fetchHistory());
        assert.ok(history.includes('extractionWorkflow'));
        assert.ok(!history.includes('hunter2'), 'password absent from history');
      },
      { sourceUrl: url.toString() },
    );
  });

  it('waitForManifest waits in one manifestReady update instead of polling; a run that fails first rejects it with its failure', async () => {
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table, partitions: 2 });
      const manifest = await waitForManifest(handle);
      assert.equal(manifest.files.length, 2);
      const events = (await handle.fetchHistory()).events ?? [];
      const accepted = events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'manifestReady');
      assert.equal(accepted.length, 1, 'one update, accepted before the manifest existed');
      assert.ok(
        events.some((e) => e.workflowExecutionUpdateCompletedEventAttributes),
        'the update completed with the manifest',
      );
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });

      const failing = await start(taskQueue, { table: 'wf.does_not_exist', partitions: 2 });
      await assert.rejects(waitForManifest(failing), (err: unknown) => err instanceof WorkflowFailedError && /TABLE_NOT_FOUND/.test(JSON.stringify(err.cause)));
    });
  });

  it('a run started without parsed input (no client, no CLI), or with numbers the workflow cannot use, fails with INPUT_INVALID at once, creating nothing', async () => {
    const parsed = parseExtractionInput({ tables: [table] });
    // A set without its bound copied nothing and completed its receipt; the others failed every workflow task
    // (a retry interval past the schema's hour: BadScheduleActivityAttributes, its maximum interval out of range).
    const unusable = [
      { ...parsed, partitionRetry: { maximumAttempts: 5, initialIntervalMs: Number.MAX_SAFE_INTEGER } },
      { ...parsed, maxInFlight: undefined },
      { ...parsed, partitionRetry: {} },
      { ...parsed, partitionRetry: { maximumAttempts: 0, initialIntervalMs: 1000 } },
      { ...parsed, timeouts: { ...parsed.timeouts, partitionStartToCloseMs: -5 } },
      { ...parsed, commitDeadlineMs: 0.5 },
      { ...parsed, timeouts: { ...parsed.timeouts, loadStartToCloseMs: 31 * 24 * 3_600_000 } },
      // Names the run's label is made of: not a string, or past the search attribute's 2 KB (each failed every workflow task).
      { ...parsed, tables: [1] },
      { ...parsed, tables: undefined, schema: 's'.repeat(3000) },
      { ...parsed, tables: undefined, table: 't'.repeat(3000) },
      // A stream load without its target's name ended retain_commit_unknown, its load reported as maybe committed.
      { ...parsed, target: { via: 'stream' } },
    ];
    await withWorker(async ({ taskQueue }) => {
      for (const [i, input] of ([null, 's.t', { table }, { tables: [table], schema: 'wf' }, ...unusable] as unknown[]).entries()) {
        const workflowId = `unparsed-input-${i}-${Date.now()}`;
        const handle = await live().temporal.client.workflow.start('extractionWorkflow', { taskQueue, workflowId, args: [input] });
        await assert.rejects(handle.result(), (err: unknown) => {
          assert.ok(err instanceof WorkflowFailedError);
          assert.equal((err.cause as { type?: string }).type, 'INPUT_INVALID');
          if (i === 4) assert.match(err.cause!.message, /has 9007199254740991 partitionRetry\.initialIntervalMs, where a whole number from 1 to 3600000 goes/);
          return true;
        });
        const events = (await handle.fetchHistory()).events ?? [];
        assert.ok(!events.some((e) => e.activityTaskScheduledEventAttributes), 'no activity ran');
        assert.ok(!events.some((e) => e.workflowTaskFailedEventAttributes), 'no workflow task failed');
      }
    });
  });

  it('an output folder that cannot be made fails the run once its retries are spent (at least 3; they went on for ever), with the cause', async () => {
    // A file where the folder's parent should be: ENOTDIR, which no retry mends.
    const blocker = `not-a-folder-${Math.random().toString(36).slice(2)}`;
    await writeFile(join(live().outRoot, blocker), 'x');
    await withWorker(async ({ taskQueue }) => {
      for (const partitions of [1, 2]) {
        const handle = await start(taskQueue, { table, partitions, outDir: `${blocker}/runs`, partitionRetry: { maximumAttempts: 1, initialIntervalMs: 100 } });
        await assert.rejects(handle.result(), (err: unknown) => {
          assert.ok(err instanceof WorkflowFailedError);
          assert.match(JSON.stringify(err.cause), /ENOTDIR/);
          return true;
        });
        const attempts = (await handle.fetchHistory())
          .events!.filter((e) => e.activityTaskStartedEventAttributes)
          .map((e) => e.activityTaskStartedEventAttributes!.attempt);
        assert.ok(attempts.includes(3) && !attempts.some((a) => (a ?? 0) > 3), `bookkeeping is tried 3 times at least: attempts ${attempts.join(', ')}`);
      }
    });
  });

  it('bad input fails the run with a stable, non-retryable type and leaves nothing behind', async () => {
    await admin().query('SELECT 1');
    await withWorker(async ({ taskQueue }) => {
      const handle = await start(taskQueue, { table: 'wf.does_not_exist', partitions: 2 });
      await assert.rejects(handle.result(), (err: unknown) => {
        assert.ok(err instanceof WorkflowFailedError);
        assert.match(JSON.stringify(err.cause), /TABLE_NOT_FOUND/);
        return true;
      });
    });
  });
});

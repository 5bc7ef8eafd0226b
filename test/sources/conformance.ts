/**
 * The source conformance kit: one suite, run against a live server per adapter (one
 * `*.test.ts` each), that checks the contract's rules (src/sources/source-adapter.ts):
 * completion only after exhaustion; snapshot fields only with native proof; retain (and abort)
 * leave no session or transaction; the receipt's window brackets every range's real read; and
 * each receipt's rows, bytes and sha256 are those of the bytes written.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, PgExtractError } from '../../src/errors';
import type { FileReceipt } from '../../src/contract/file-receipt';
import { utcMicros } from '../../src/lifecycle/utc-timestamp';
import type { TableRequest } from '../../src/postgres/catalog';
import type { RangeCopy, SourceAdapter, SourceRead } from '../../src/sources/source-adapter';
import { LocalStore } from '../../src/storage/local-store';
import { live } from '../support/services';

/** What the kit needs from one adapter's test file. */
export interface ConformanceFixture {
  name: string;
  adapter(): Promise<SourceAdapter>;
  /**
   * Creates the kit's table: `rows` rows, an integer primary key `id` from 1, a text column
   * `name` (commas, quotes and newlines in some rows, NULL in others); returns its request.
   */
  seed(rows: number): Promise<TableRequest>;
  /** The product's sessions and open transactions still on the server (0 once all are closed). */
  liveResources(): Promise<number>;
}

const ROWS = 1000;
const PARTITIONS = 4;
const FORMAT = { format: 'csv' as const, header: false, gzip: false };

/** CSV records in `text` (quoted fields may hold newlines). */
function csvRecords(text: string): number {
  let records = 0;
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (ch === '\n' && !quoted) records++;
  }
  return records;
}

export function conformanceSuite(fixture: ConformanceFixture): void {
  describe(`source adapter conformance: ${fixture.name} (live)`, function () {
    this.timeout(120_000);
    let adapter: SourceAdapter;
    let request: TableRequest;
    let root: string;
    let store: LocalStore;
    let run = 0;

    before(async () => {
      adapter = await fixture.adapter();
      request = await fixture.seed(ROWS);
      root = await mkdtemp(join(live().scratch, `conformance-${fixture.name}-`));
      store = new LocalStore(root, 0o600);
    });

    /** Copies every planned range into its own file, as partitions do; returns the copies and their evidence. */
    async function copyAll(read: SourceRead, ranges = read.plan.ranges): Promise<{ copies: RangeCopy[]; evidence: FileReceipt[] }> {
      const folder = `run-${++run}`;
      await mkdir(join(root, folder));
      const copies = await Promise.all(
        ranges.map(async (range, i) => adapter.copyRange(read.handle, range, await store.sink(`${folder}/part-${i}.csv`), { format: FORMAT })),
      );
      const evidence = copies.map((c) => ({ name: store.evidenceName(c.location), rows: c.rows, bytes: c.bytes, sha256: c.sha256 }));
      return { copies, evidence };
    }

    it('completes only after exhaustion: one receipted range short is EXTRACTION_INCOMPLETE, and the receipt stays open', async () => {
      const read = await adapter.open(request, { partitions: PARTITIONS });
      try {
        assert.equal(read.plan.ranges.length, PARTITIONS);
        const { evidence } = await copyAll(read);
        await assert.rejects(
          read.close('success', evidence.slice(1)),
          (err: unknown) => err instanceof PgExtractError && err.code === ErrorCode.EXTRACTION_INCOMPLETE,
        );
        assert.equal(read.receipt().extractionCompletedAt, null);
        const receipt = await read.close('success', evidence);
        assert.notEqual(receipt.extractionCompletedAt, null);
        assert.deepEqual(receipt.evidence, evidence);
      } finally {
        await read.close('abort');
      }
    });

    it('claims a snapshot only with native proof that every range read it', async () => {
      const read = await adapter.open(request, { partitions: PARTITIONS });
      const { copies, evidence } = await copyAll(read);
      const receipt = await read.close('success', evidence);
      assert.equal(receipt.clockAuthority, adapter.claims.clockAuthority);
      assert.equal(receipt.snapshotAuthority, adapter.claims.snapshotAuthority);
      if (adapter.claims.snapshotAuthority === null) {
        assert.equal(receipt.snapshotAcquiredAt, null);
        assert.equal(receipt.sourceToken, null);
        assert.equal(receipt.pointInTime, false, 'says the ranges were not read at one point in time');
        assert.equal(read.handle.snapshotId, null);
        assert.equal(read.handle.snapshotDigest, null);
        for (const c of copies) assert.equal(c.snapshotDigest, null);
      } else {
        assert.match(receipt.sourceToken ?? '', /^sha256:[0-9a-f]{64}$/);
        assert.notEqual(read.handle.snapshotDigest, null);
        for (const c of copies) assert.equal(c.snapshotDigest, read.handle.snapshotDigest, 'each range proves it read the one snapshot');
      }
      assert.equal(new Set(copies.map((c) => c.sessionId)).size, copies.length, 'each range on a session of its own');
    });

    it('brackets the real read: the window opens before planning and closes after the last range', async () => {
      const before = new Date();
      const read = await adapter.open(request, { partitions: PARTITIONS });
      const { copies, evidence } = await copyAll(read);
      const receipt = await read.close('success', evidence);
      const after = new Date(Date.now() + 1);
      const started = utcMicros(receipt.extractionStartedAt);
      const completed = utcMicros(receipt.extractionCompletedAt!);
      assert.ok(started >= BigInt(before.getTime()) * 1000n, `started ${receipt.extractionStartedAt} is not before open (${before.toISOString()})`);
      assert.ok(completed <= BigInt(after.getTime()) * 1000n, `completed ${receipt.extractionCompletedAt} is after close returned`);
      for (const c of copies) {
        assert.ok(started <= utcMicros(c.startedAt), `range started ${c.startedAt} before the window ${receipt.extractionStartedAt}`);
        assert.ok(completed >= utcMicros(c.completedAt), `range completed ${c.completedAt} after the window ${receipt.extractionCompletedAt}`);
      }
    });

    it("receipts' rows, bytes and sha256 are those of the bytes written", async () => {
      const read = await adapter.open(request, { partitions: PARTITIONS });
      const { copies, evidence } = await copyAll(read);
      const receipt = await read.close('success', evidence);
      let rows = 0;
      for (const [i, c] of copies.entries()) {
        const bytes = await readFile(c.location);
        assert.equal(receipt.evidence[i]!.bytes, bytes.length);
        assert.equal(receipt.evidence[i]!.sha256, createHash('sha256').update(bytes).digest('hex'));
        assert.equal(receipt.evidence[i]!.rows, csvRecords(bytes.toString('utf8')));
        rows += receipt.evidence[i]!.rows;
      }
      assert.equal(rows, ROWS, 'the ranges cover every row exactly once');
    });

    for (const outcome of ['retain_commit_unknown', 'abort'] as const) {
      it(`${outcome} closes live resources: no session or transaction is left`, async () => {
        const read = await adapter.open(request, { partitions: PARTITIONS });
        await copyAll(read, read.plan.ranges.slice(0, 1));
        assert.equal(await read.close(outcome), null);
        assert.equal(await fixture.liveResources(), 0);
        assert.equal(read.receipt().extractionCompletedAt, null, `${outcome} never completes the receipt`);
      });
    }
  });
}

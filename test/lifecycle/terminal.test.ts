/** Terminal decision: first wins, one receipt, files released exactly once, views share the root. */
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, writeFile, access, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { ErrorCode } from '../../src/errors';
import { ArtifactView, TERMINAL_OUTCOMES, TerminalAuthority, type TerminalOutcome, outcomeForFailure } from '../../src/lifecycle';
import { FileReleaseAuthority } from '../../src/storage/file-release';

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

async function filesIn(dir: string, n: number): Promise<string[]> {
  const paths = Array.from({ length: n }, (_, i) => join(dir, `part-${i}.csv`));
  await Promise.all(paths.map((p) => writeFile(p, 'x\n')));
  return paths;
}

describe('TerminalAuthority', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'terminal-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function authority(files: string[], closed: TerminalOutcome[] = [], release = new FileReleaseAuthority()): TerminalAuthority {
    return new TerminalAuthority({
      files,
      releaseFiles: (f) => release.releaseAll(f),
      closeSource: async (outcome) => void closed.push(outcome),
    });
  }

  for (const [outcome, deleted] of [
    ['success', true],
    ['abort', true],
    ['retain_commit_unknown', false],
  ] as const) {
    it(`${outcome} ${deleted ? 'deletes' : 'retains'} the files and closes the source once`, async () => {
      const files = await filesIn(dir, 2);
      const closed: TerminalOutcome[] = [];
      const receipt = await authority(files, closed).decide(outcome);
      assert.equal(receipt.outcome, outcome);
      assert.deepEqual(closed, [outcome]);
      assert.equal(receipt.cleanupSucceeded, true);
      assert.equal(receipt.cleanupErrorCode, null);
      assert.equal(receipt.cleanupAttempted, deleted);
      assert.deepEqual(receipt.filesDeleted, deleted ? files : []);
      assert.deepEqual(receipt.filesRetained, deleted ? [] : files);
      for (const f of files) assert.equal(await exists(f), !deleted);
    });
  }

  it('the first decision wins even when calls race, and every caller gets the same receipt', async () => {
    const files = await filesIn(dir, 3);
    const closed: TerminalOutcome[] = [];
    const t = authority(files, closed);
    const receipts = await Promise.all([t.decide('retain_commit_unknown'), t.decide('success'), t.decide('abort')]);
    assert.ok(receipts.every((r) => r === receipts[0]));
    assert.equal(receipts[0]!.outcome, 'retain_commit_unknown');
    assert.deepEqual(closed, ['retain_commit_unknown']);
    assert.equal(await t.decide('success'), receipts[0]);
  });

  it('property: for any sequence of decisions, every receipt equals the first decision', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...TERMINAL_OUTCOMES), { minLength: 1, maxLength: 8 }), async (outcomes) => {
        const t = new TerminalAuthority({ files: [], releaseFiles: async () => ({ deleted: [], failures: [] }) });
        const receipts = await Promise.all(outcomes.map((o) => t.decide(o)));
        assert.ok(receipts.every((r) => r === receipts[0] && r.outcome === outcomes[0]));
      }),
    );
  });

  it('an unknown outcome is rejected and does not count as the decision', async () => {
    const t = authority([]);
    await assert.rejects(t.decide('maybe' as TerminalOutcome), { code: ErrorCode.TERMINAL_OUTCOME_INVALID });
    assert.equal((await t.decide('abort')).outcome, 'abort');
  });

  it('a deletion that really fails reports cleanupSucceeded false and a stable code, without throwing', async () => {
    const [good] = await filesIn(dir, 1);
    // A directory where a file is expected: unlink fails with EISDIR even for root.
    const stubborn = join(dir, 'part-dir.csv');
    await mkdir(join(stubborn, 'inner'), { recursive: true });
    const receipt = await authority([good!, stubborn]).decide('success');
    assert.equal(receipt.outcome, 'success');
    assert.equal(receipt.cleanupAttempted, true);
    assert.equal(receipt.cleanupSucceeded, false);
    assert.equal(receipt.cleanupErrorCode, 'EISDIR');
    assert.deepEqual(receipt.filesDeleted, [good]);
    assert.deepEqual(receipt.filesRetained, [stubborn]);
  });

  it('a source that fails to close is reported as SOURCE_CLOSE_FAILED, outcome unchanged', async () => {
    const t = new TerminalAuthority({
      files: [],
      releaseFiles: async () => ({ deleted: [], failures: [] }),
      closeSource: async () => {
        throw new Error('connection reset');
      },
    });
    const receipt = await t.decide('success');
    assert.equal(receipt.outcome, 'success');
    assert.equal(receipt.cleanupSucceeded, false);
    assert.equal(receipt.cleanupErrorCode, 'SOURCE_CLOSE_FAILED');
  });
});

describe('FileReleaseAuthority', () => {
  it('deletes each file at most once across concurrent views; a bare ENOENT is not proof: FILES_NOT_VISIBLE', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'release-'));
    const path = join(dir, 'a.csv');
    await writeFile(path, 'x');
    let unlinks = 0;
    const release = new FileReleaseAuthority(async (p) => {
      unlinks++;
      await rm(p);
    });
    const results = await Promise.all([release.release(path), release.release(join(dir, '.', 'a.csv')), release.release(path)]);
    assert.equal(unlinks, 1);
    assert.ok(results.every((r) => r.released));
    const gone = await new FileReleaseAuthority().release(join(dir, 'never-existed.csv'));
    assert.deepEqual([gone.released, gone.code], [false, 'FILES_NOT_VISIBLE']);
    await rm(dir, { recursive: true, force: true });
  });
});

describe('ArtifactView', () => {
  it('a projection decides through the root: it cannot reverse a root retain', async () => {
    const root = new TerminalAuthority({ files: ['/x/a', '/x/b'], releaseFiles: async (f) => ({ deleted: [...f], failures: [] }) });
    const view = ArtifactView.root(root).project(['/x/a']);
    const rootReceipt = await root.decide('retain_commit_unknown');
    assert.equal(await view.decide('success'), rootReceipt);
    assert.deepEqual(rootReceipt.filesDeleted, []);
  });

  it('refuses a projection over files the root does not own', () => {
    const root = new TerminalAuthority({ files: ['/x/a'], releaseFiles: async () => ({ deleted: [], failures: [] }) });
    assert.throws(() => ArtifactView.root(root).project(['/y/z']), { code: ErrorCode.VIEW_FILE_NOT_OWNED });
  });

  it('refuses to rebind once either authority has decided', async () => {
    const none = async (): Promise<{ deleted: string[]; failures: [] }> => ({ deleted: [], failures: [] });
    const a = new TerminalAuthority({ files: [], releaseFiles: none });
    const b = new TerminalAuthority({ files: [], releaseFiles: none });
    const view = ArtifactView.root(a);
    assert.equal(view.rebind(b).terminal, b);
    await b.decide('abort');
    assert.throws(() => view.rebind(b), { code: ErrorCode.TERMINAL_REBIND_AFTER_DECISION });
    await a.decide('abort');
    assert.throws(() => view.rebind(new TerminalAuthority({ files: [], releaseFiles: none })), {
      code: ErrorCode.TERMINAL_REBIND_AFTER_DECISION,
    });
  });
});

describe('outcomeForFailure', () => {
  it('maps dispositions, honours an explicit outcome anywhere in the cause chain, and defaults to abort', () => {
    assert.equal(outcomeForFailure(Object.assign(new Error(), { disposition: 'cleanup_safe' })), 'abort');
    assert.equal(outcomeForFailure(Object.assign(new Error(), { disposition: 'committed_secondary_only' })), 'success');
    assert.equal(outcomeForFailure(Object.assign(new Error(), { disposition: 'preserve_evidence' })), 'retain_commit_unknown');
    const inner = Object.assign(new Error('inner'), { terminalOutcome: 'retain_commit_unknown' });
    assert.equal(outcomeForFailure(new Error('outer', { cause: inner })), 'retain_commit_unknown');
    assert.equal(outcomeForFailure(Object.assign(new Error(), { disposition: 'cleanup_safe', cause: inner })), 'retain_commit_unknown');
    assert.equal(outcomeForFailure(new Error('??')), 'abort');
    assert.equal(outcomeForFailure('not even an error'), 'abort');
  });
});

/** ExtractionLifecycleAuthority ordering, idempotence and immutability of handed-out receipts. */
import assert from 'node:assert/strict';
import { ErrorCode } from '../../src/errors';
import { ExtractResult, ExtractionLifecycleAuthority, SnapshotAuthority } from '../../src/lifecycle';
import { digestSourceToken } from '../../src/postgres/source-token';

const T0 = '2026-01-01T00:00:00.000001Z';
const T1 = '2026-01-01T00:00:00.000002Z';
const T2 = '2026-01-01T00:00:01.000000Z';
const evidence = [{ name: 'part-0', rows: 3, bytes: 30, sha256: 'c'.repeat(64) }];

describe('ExtractionLifecycleAuthority', () => {
  it('starts pending with no receipt, so a lazy artifact can be handed out unread', () => {
    const a = new ExtractionLifecycleAuthority();
    assert.equal(a.state, 'pending');
    assert.equal(a.latest(), null);
  });

  it('acquire() records once; later calls return the first receipt', () => {
    const a = new ExtractionLifecycleAuthority();
    const first = a.acquire(T0);
    assert.equal(a.acquire(T2), first);
    assert.equal(first.extractionStartedAt, T0);
  });

  it('complete() before acquire() fails with EXTRACTION_NOT_STARTED', () => {
    assert.throws(() => new ExtractionLifecycleAuthority().complete(evidence), { code: ErrorCode.EXTRACTION_NOT_STARTED });
  });

  it('complete() swaps in a new receipt and leaves the one already held unchanged', () => {
    const a = new ExtractionLifecycleAuthority({ clockAuthority: 'postgresql.server' });
    const held = a.acquireSnapshot(SnapshotAuthority.repeatableRead, digestSourceToken('1:2:'), T1);
    const done = a.complete(evidence, T2);
    assert.notEqual(done, held);
    assert.equal(held.extractionCompletedAt, null);
    assert.equal(done.extractionCompletedAt, T2);
    assert.deepEqual(done.evidence, evidence);
    assert.equal(a.complete([], T2), done, 'complete() is idempotent');
    assert.equal(a.state, 'complete');
  });

  it('acquireSnapshot() with the same values is a no-op, different values fail with SNAPSHOT_CHANGED', () => {
    const a = new ExtractionLifecycleAuthority();
    const token = digestSourceToken('00000003-0000001B-1');
    const r = a.acquireSnapshot(SnapshotAuthority.exportedSnapshot, token, T1);
    assert.equal(a.acquireSnapshot(SnapshotAuthority.exportedSnapshot, token, T2), r);
    assert.throws(() => a.acquireSnapshot(SnapshotAuthority.exportedSnapshot, digestSourceToken('other'), T2), {
      code: ErrorCode.SNAPSHOT_CHANGED,
    });
  });

  it('a snapshot cannot be recorded after completion', () => {
    const a = new ExtractionLifecycleAuthority();
    a.acquire(T0);
    a.complete([], T1);
    assert.throws(() => a.acquireSnapshot(SnapshotAuthority.repeatableRead, digestSourceToken('x'), T2), {
      code: ErrorCode.EXTRACTION_ALREADY_COMPLETE,
    });
  });

  it('digests the token: sha256 of the raw text, never the text itself', () => {
    assert.equal(digestSourceToken('abc'), 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.throws(() => digestSourceToken(' '), { code: ErrorCode.SOURCE_TOKEN_EMPTY });
  });

  it('ExtractResult reads the latest receipt live, never a stale copy', () => {
    const a = new ExtractionLifecycleAuthority();
    const result = new ExtractResult({ path: 'f' }, a);
    const completedAt = (): string | null | undefined => result.extractionReceipt?.extractionCompletedAt;
    assert.equal(result.extractionReceipt, null);
    a.acquire(T0);
    assert.equal(completedAt(), null);
    a.complete([], T1);
    assert.equal(completedAt(), T1);
  });
});

/** The owned staging handle drops the table at every failure point before ownership passes. */
import assert from 'node:assert/strict';
import { ErrorCode } from '../../src/errors';
import { ownedStagingHandle } from '../../src/lifecycle';

function harness() {
  const events: string[] = [];
  return {
    events,
    create: async () => {
      events.push('create');
      return 'stg_1';
    },
    drop: async (h: string) => void events.push(`drop ${h}`),
  };
}

describe('ownedStagingHandle', () => {
  it('hands ownership to the caller when materialize resolves: nothing is dropped', async () => {
    const h = harness();
    const { handle, result } = await ownedStagingHandle({ ...h, materialize: async () => 42 });
    assert.deepEqual([handle, result, h.events], ['stg_1', 42, ['create']]);
  });

  for (const step of ['row insertion', 'file import', 'contract validation', 'logging']) {
    it(`drops the table when ${step} fails, and rethrows that very error`, async () => {
      const h = harness();
      const primary = new Error(`${step} failed`);
      await assert.rejects(ownedStagingHandle({ ...h, materialize: async () => Promise.reject(primary) }), (err) => err === primary);
      assert.deepEqual(h.events, ['create', 'drop stg_1']);
    });
  }

  it('drops the table when cancelled mid-materialize', async () => {
    const h = harness();
    const controller = new AbortController();
    const pending = ownedStagingHandle({
      ...h,
      signal: controller.signal,
      materialize: () => new Promise<never>(() => setTimeout(() => controller.abort(), 5)),
    });
    await assert.rejects(pending, { code: ErrorCode.STAGING_CANCELLED });
    assert.deepEqual(h.events, ['create', 'drop stg_1']);
  });

  it('creates nothing when already cancelled', async () => {
    const h = harness();
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(ownedStagingHandle({ ...h, signal: controller.signal, materialize: async () => 1 }), {
      code: ErrorCode.STAGING_CANCELLED,
    });
    assert.deepEqual(h.events, []);
  });

  it('a failed drop becomes a redacted note on the primary error and never replaces it', async () => {
    const primary = new Error('COPY failed');
    const secret = Object.assign(new Error('could not connect to postgres://u:hunter2@db/x row=(42,secret)'), { code: '08006' });
    await assert.rejects(
      ownedStagingHandle({
        create: async () => 's',
        drop: async () => Promise.reject(secret),
        materialize: async () => Promise.reject(primary),
      }),
      (err) => err === primary,
    );
    const notes = (primary as Error & { notes: string[] }).notes;
    assert.deepEqual(notes, ['staging handle cleanup failed: 08006']);
    assert.ok(!JSON.stringify(notes).includes('hunter2'));
  });
});

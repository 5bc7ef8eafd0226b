/**
 * Hostile and malformed input at the client and at the activity boundary (the CLI has its own
 * suite): each is refused with a stable code naming the field, before any session, file or
 * workflow exists.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowNotFoundError } from '@temporalio/client';
import { createActivities, createHolderActivities, SnapshotHolderRegistry } from '../../src/activities';
import { startExtraction } from '../../src/client';
import { sourceUrl, targetUrl } from '../../src/config';
import { ErrorCode, PgExtractError } from '../../src/errors';
import { type ExtractionInput, parseExtractionInput } from '../../src/contract/extraction-input';
import { admin, ourSessions } from '../support/database';
import { live } from '../support/services';
import { OutputStores } from '../../src/storage/output-stores';
import { openSession } from '../../src/postgres/session';

const valid = (): ExtractionInput => parseExtractionInput({ table: 'badin.t' });

async function treeOf(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true }).catch(() => [] as string[])).sort();
}

describe('bad input (live)', function () {
  this.timeout(60_000);
  let root: string;
  let outsideTarget: string;
  before(async () => {
    await admin().query(`DROP SCHEMA IF EXISTS badin CASCADE; CREATE SCHEMA badin; CREATE TABLE badin.t (id int PRIMARY KEY, doc jsonb, v text)`);
    root = join(live().scratch, 'bad-input-root');
    await mkdir(root, { recursive: true });
    // A symlink inside the root to a folder outside it.
    outsideTarget = await mkdtemp(join(tmpdir(), 'pg-extract-outside-'));
    await symlink(outsideTarget, join(root, 'escape'));
  });
  after(async () => {
    if (outsideTarget) await rm(outsideTarget, { recursive: true, force: true });
  });

  describe('at the client: rejected before a workflow starts', () => {
    const cases: [string, unknown, ErrorCode, string][] = [
      ['a table that is not a string', { table: 42 }, ErrorCode.INPUT_INVALID, 'table'],
      ['an injected table name', { table: 'badin.t; DELETE FROM badin.t' }, ErrorCode.IDENTIFIER_INVALID, 'table'],
      ['partitions as a string', { table: 'a.b', partitions: '4' }, ErrorCode.INPUT_INVALID, 'partitions'],
      ['partitions NaN', { table: 'a.b', partitions: Number.NaN }, ErrorCode.INPUT_INVALID, 'partitions'],
      ['gzip as "yes"', { table: 'a.b', gzip: 'yes' }, ErrorCode.INPUT_INVALID, 'gzip'],
      ['an unknown field', { table: 'a.b', password: 'x' }, ErrorCode.INPUT_INVALID, 'input'],
      ['2000 columns', { table: 'a.b', columns: Array.from({ length: 2000 }, (_, i) => `c${i}`) }, ErrorCode.INPUT_INVALID, 'columns'],
      ['a 100 kB payload', { table: 'a.b', outDir: 'x'.repeat(100_000) }, ErrorCode.INPUT_INVALID, 'input'],
      ['an empty column name', { table: 'a.b', columns: [''] }, ErrorCode.IDENTIFIER_INVALID, 'columns.0'],
      ['a column named twice', { table: 'a.b', columns: ['id', 'v', 'id'] }, ErrorCode.INPUT_INVALID, 'columns'],
      ['a column named twice, folded and quoted', { table: 'a.b', columns: ['ID', '"id"'] }, ErrorCode.INPUT_INVALID, 'columns'],
      ['an empty include, which would keep no table', { schema: 'a', include: [] }, ErrorCode.INPUT_INVALID, 'include'],
      ['a schema name with a slash, unquoted', { schema: 'a/../b' }, ErrorCode.IDENTIFIER_INVALID, 'schema'],
      ['a commit deadline of zero', { table: 'a.b', commitDeadlineMs: 0 }, ErrorCode.INPUT_INVALID, 'commitDeadlineMs'],
      ['eleven snapshot attempts', { table: 'a.b', maxSnapshotAttempts: 11 }, ErrorCode.INPUT_INVALID, 'maxSnapshotAttempts'],
      ['an output folder escaping with ..', { table: 'a.b', outDir: 'a/../../b' }, ErrorCode.OUTPUT_PATH_ESCAPES_ROOT, 'outDir'],
      [
        'gzip for a stream, which stores nothing',
        { table: 'a.b', gzip: true, target: { name: 't', table: 'a.c', via: 'stream' } },
        ErrorCode.INPUT_INVALID,
        'target.via',
      ],
    ];
    for (const [what, request, code, field] of cases) {
      it(`${what} → ${code} (${field})`, async () => {
        const workflowId = `bad-input-${field}-${Math.random().toString(36).slice(2)}`;
        await assert.rejects(startExtraction(live().temporal.client, request as never, { taskQueue: 'nowhere', workflowId }), (err: unknown) => {
          assert.ok(err instanceof PgExtractError, String(err));
          assert.equal(err.code, code);
          if (field !== 'input') assert.equal(err.field, field);
          if (field === 'schema') assert.match(err.message, /is not a schema name \(quote one with special characters, as "My Schema"\)/);
          return true;
        });
        await assert.rejects(live().temporal.client.workflow.getHandle(workflowId).describe(), WorkflowNotFoundError);
      });
    }
  });

  describe('at the activity boundary: non-retryable, nothing created', () => {
    // Expected failures would each print a stack at WARN; errors still show.
    const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
    // `stranger` logs in as a role the server does not have (SQLSTATE 28000).
    const strangerUrl = (): string => Object.assign(new URL(live().pg.url), { username: 'no_such_role' }).toString();
    const urls = (name: string): string => sourceUrl(name, { PG_EXTRACT_SOURCE_URL: live().pg.url, PG_EXTRACT_SOURCE_STRANGER_URL: strangerUrl() });
    const activities = () =>
      createActivities({
        stores: new OutputStores({ outputRoot: root, fileMode: 0o600 }),
        sourceUrl: urls,
        targetUrl: (name) => targetUrl(name, {}),
        holderTaskQueue: 'q',
      });
    const partition = (patch: Record<string, unknown>) => ({
      input: valid(),
      snapshotId: '00000003-0000001B-1',
      table: { schema: 'badin', table: 't', columns: ['id'] },
      key: null,
      range: { kind: 'all' },
      partition: 0,
      name: 'run/attempt-1/part-0000.csv',
      ...patch,
    });
    const cases: [string, () => Promise<unknown>, string][] = [
      [
        'a hostile snapshot id',
        () => env.run(activities().copyPartition, partition({ snapshotId: "x'; DROP TABLE badin.t; --" }) as never),
        ErrorCode.SNAPSHOT_ID_INVALID,
      ],
      ['an absolute file name', () => env.run(activities().copyPartition, partition({ name: '/etc/cron.d/x' }) as never), ErrorCode.INPUT_INVALID],
      [
        'a file name escaping the root',
        () => env.run(activities().copyPartition, partition({ name: '../../x.csv' }) as never),
        ErrorCode.OUTPUT_PATH_ESCAPES_ROOT,
      ],
      [
        'an unknown range kind',
        () => env.run(activities().copyPartition, partition({ range: { kind: 'sql', where: '1=1' } }) as never),
        ErrorCode.INPUT_INVALID,
      ],
      [
        'a key cast to an injected type',
        () => env.run(activities().copyPartition, partition({ key: { name: 'id', kind: 'integer', sqlType: 'int8; DROP' } }) as never),
        ErrorCode.INPUT_INVALID,
      ],
      [
        'an injected table in the input',
        () => env.run(activities().copyPartition, partition({ input: { ...valid(), table: 'x;y' } }) as never),
        ErrorCode.IDENTIFIER_INVALID,
      ],
      [
        'an unknown source',
        () => env.run(activities().wholeCopy, { input: { ...valid(), source: 'nope' }, name: 'w/x.csv' } as never),
        ErrorCode.SOURCE_UNKNOWN,
      ],
      [
        'a source that refuses the login, copied whole',
        () => env.run(activities().wholeCopy, { input: { ...valid(), source: 'stranger' }, name: 'w/x.csv' } as never),
        ErrorCode.SOURCE_AUTH_FAILED,
      ],
      [
        'a source that refuses the login, held',
        () =>
          env.run(
            createHolderActivities({ registry: new SnapshotHolderRegistry(), sourceUrl: urls, stores: new OutputStores({ outputRoot: root, fileMode: 0o600 }) })
              .holdSnapshot,
            { attemptKey: 'k', input: { ...valid(), source: 'stranger' } } as never,
          ),
        ErrorCode.SOURCE_AUTH_FAILED,
      ],
      [
        'an unknown table',
        () => env.run(activities().wholeCopy, { input: { ...valid(), table: 'badin.missing' }, name: 'w/x.csv' } as never),
        ErrorCode.TABLE_NOT_FOUND,
      ],
      [
        'an unknown column',
        () => env.run(activities().wholeCopy, { input: { ...valid(), columns: ['nope'] }, name: 'w/x.csv' } as never),
        ErrorCode.COLUMN_NOT_FOUND,
      ],
      [
        'a key of an unsupported type',
        () =>
          env.run(
            createHolderActivities({ registry: new SnapshotHolderRegistry(), sourceUrl: urls, stores: new OutputStores({ outputRoot: root, fileMode: 0o600 }) })
              .holdSnapshot,
            { attemptKey: 'k', input: { ...valid(), key: 'doc' } } as never,
          ),
        ErrorCode.KEY_TYPE_UNSUPPORTED,
      ],
      [
        'a release outside the root',
        () => env.run(activities().releaseOutputs, { paths: ['/etc/hostname'], sweepFolders: [], discardFolders: [] }),
        ErrorCode.OUTPUT_PATH_ESCAPES_ROOT,
      ],
      [
        'a discard of the root itself above it',
        () => env.run(activities().releaseOutputs, { paths: [], sweepFolders: [], discardFolders: ['..'] }),
        ErrorCode.OUTPUT_PATH_ESCAPES_ROOT,
      ],
      [
        'an output folder through a symlink that leaves the root',
        () => env.run(activities().prepareOutputFolder, 'escape/inside'),
        ErrorCode.OUTPUT_PATH_ESCAPES_ROOT,
      ],
      [
        'a file through a symlink that leaves the root',
        () => env.run(activities().copyPartition, partition({ name: 'escape/part.csv' }) as never),
        ErrorCode.OUTPUT_PATH_ESCAPES_ROOT,
      ],
    ];
    for (const [what, call, code] of cases) {
      it(`${what} → ${code}`, async () => {
        const before = await treeOf(root);
        const outside = await treeOf(outsideTarget);
        await assert.rejects(call(), (err: unknown) => {
          assert.ok(err instanceof ApplicationFailure, String(err));
          assert.equal(err.type, code);
          assert.equal(err.nonRetryable, true);
          return true;
        });
        assert.deepEqual(await treeOf(root), before, 'no file created under the root');
        assert.deepEqual(await treeOf(outsideTarget), outside, 'nothing created outside it');
        assert.deepEqual(await ourSessions(), [], 'no session left');
      });
    }

    it('a login refused on a target is TARGET_AUTH_FAILED, on a source SOURCE_AUTH_FAILED, naming the side (both not retried)', async () => {
      for (const [role, code, side] of [
        ['target', ErrorCode.TARGET_AUTH_FAILED, 'target'],
        ['partition', ErrorCode.SOURCE_AUTH_FAILED, 'source'],
      ] as const) {
        await assert.rejects(openSession(strangerUrl(), role), (err: unknown) => {
          assert.ok(err instanceof PgExtractError, String(err));
          assert.equal(err.code, code);
          assert.equal(err.field, side);
          assert.match(err.message, new RegExp(`^the PostgreSQL ${side} refused the login: role "no_such_role" does not exist`));
          return true;
        });
      }
    });

    it('a real file outside the root survives a release request naming it', async () => {
      const victim = join(live().scratch, 'victim.txt');
      await writeFile(victim, 'keep me');
      await assert.rejects(env.run(activities().releaseOutputs, { paths: [victim], sweepFolders: [], discardFolders: [] }));
      assert.deepEqual(await treeOf(live().scratch).then((t) => t.includes('victim.txt')), true);
    });

    it("a plan awaited after its hold failed, then cancelled, leaves no entry in the worker's registry", async () => {
      const registry = new SnapshotHolderRegistry();
      const holder = createHolderActivities({ registry, sourceUrl: urls, stores: new OutputStores({ outputRoot: root, fileMode: 0o600 }) });
      await assert.rejects(env.run(holder.holdSnapshot, { attemptKey: 'late', input: { ...valid(), key: 'doc' } } as never));
      assert.equal(registry.size, 0, 'the failed hold took its entry with it');
      // The workflow's wait for the plan may reach this worker after the hold ended: it waits, and is cancelled.
      const waiter = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });
      const waiting = waiter.run(holder.awaitSnapshotPlan, 'late');
      waiter.cancel();
      await assert.rejects(waiting);
      assert.equal(registry.size, 0, 'the entry the wait made went with it');
    });
  });
});

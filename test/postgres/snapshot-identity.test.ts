/**
 * Each partition proves its snapshot (live PostgreSQL): after importing it checks the snapshot's
 * digest and the cluster (system identifier) and database (oid) against the coordinator's plan,
 * and fails with SNAPSHOT_MISMATCH when any differs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseActivityRequest, partitionRequestSchema } from '../../src/contract/activity-requests';

import { ErrorCode, NON_RETRYABLE_CODES } from '../../src/errors';
import { digestSourceToken } from '../../src/postgres/source-token';
import { copyPartition } from '../../src/postgres/partition-copy';
import { closeSession, openSession } from '../../src/postgres/session';
import { SnapshotCoordinator } from '../../src/postgres/snapshot-coordinator';
import { parseExtractionInput } from '../../src/contract/extraction-input';
import { admin, settleSessions } from '../support/database';
import { live } from '../support/services';
import { LocalFileSink } from '../../src/storage/local-file-sink';

const csv = { format: 'csv' as const, header: true, gzip: false };

const parsePartition = (raw: unknown) => parseActivityRequest(partitionRequestSchema, raw);

describe('a partition proves the snapshot it imported (live PostgreSQL)', () => {
  let coordinatorClient: Awaited<ReturnType<typeof openSession>>;
  let coordinator: SnapshotCoordinator;

  before(async () => {
    await admin().query(`DROP SCHEMA IF EXISTS si CASCADE; CREATE SCHEMA si; CREATE TABLE si.t (id int PRIMARY KEY, v text)`);
    await admin().query(`INSERT INTO si.t SELECT g, 'v' || g FROM generate_series(1, 100) g`);
    coordinatorClient = await openSession(live().pg.url, 'coordinator');
    coordinator = await SnapshotCoordinator.export(coordinatorClient, { schema: 'si', table: 't' }, { partitions: 2 });
  });
  after(async () => {
    await coordinator.abort();
    await closeSession(coordinatorClient);
    assert.deepEqual(await settleSessions(), [], 'no session of ours is left');
  });

  function request() {
    const { plan } = coordinator;
    return {
      snapshotId: plan.snapshotId,
      snapshotDigest: digestSourceToken(plan.snapshotText),
      source: { ...plan.source },
      table: { schema: 'si', table: 't', columns: ['id', 'v'] },
      key: plan.table.key,
      range: plan.ranges[0]!,
      format: csv,
    };
  }

  async function copy(req: ReturnType<typeof request>): Promise<unknown> {
    const reader = await openSession(live().pg.url, 'partition');
    try {
      return await copyPartition(reader, req, new LocalFileSink(join(live().outRoot, 'si-part.csv'), 0o600));
    } finally {
      await closeSession(reader);
    }
  }

  it('the plan names the cluster and database the coordinator exported from', async () => {
    const r = await admin().query<{ system: string; db: number }>(
      `SELECT (SELECT system_identifier::text FROM pg_control_system()) AS system, (SELECT oid::int8 FROM pg_database WHERE datname = current_database()) AS db`,
    );
    assert.deepEqual(coordinator.plan.source, { systemIdentifier: r.rows[0]!.system, databaseOid: Number(r.rows[0]!.db) });
  });

  it("a partition with the plan's digest and identity copies its range", async () => {
    const file = (await copy(request())) as { rows: number };
    assert.equal(file.rows, 49, 'ids 1..49, below the median cut');
  });

  const tamper: [string, (r: ReturnType<typeof request>) => void][] = [
    ['snapshot digest', (r) => void (r.snapshotDigest = digestSourceToken('1:2:'))],
    ['database oid', (r) => void (r.source.databaseOid += 1)],
    ['system identifier', (r) => void (r.source.systemIdentifier = '1234567890123456789')],
  ];
  for (const [what, change] of tamper) {
    it(`a partition whose ${what} does not match fails with SNAPSHOT_MISMATCH (non-retryable)`, async () => {
      const req = request();
      change(req);
      await assert.rejects(copy(req), { code: ErrorCode.SNAPSHOT_MISMATCH });
      assert.ok(NON_RETRYABLE_CODES.includes(ErrorCode.SNAPSHOT_MISMATCH));
    });
  }

  it('a partition on another database, which refuses the import, fails with SNAPSHOT_MISMATCH, not SNAPSHOT_LOST', async () => {
    await admin().query('DROP DATABASE IF EXISTS si_elsewhere');
    await admin().query('CREATE DATABASE si_elsewhere');
    const elsewhere = new URL(live().pg.url);
    elsewhere.pathname = '/si_elsewhere';
    const reader = await openSession(elsewhere.toString(), 'partition');
    try {
      await assert.rejects(copyPartition(reader, request(), new LocalFileSink(join(live().outRoot, 'si-elsewhere.csv'), 0o600)), {
        code: ErrorCode.SNAPSHOT_MISMATCH,
        message: /database oid/,
      });
    } finally {
      await closeSession(reader);
      await admin().query('DROP DATABASE si_elsewhere WITH (FORCE)');
    }
  });

  it('the activity accepts requests without digest and identity (workflows started on older code) and checks those that have them', () => {
    const base = {
      input: parseExtractionInput({ table: 'si.t', partitions: 2 }),
      snapshotId: coordinator.plan.snapshotId,
      table: { schema: 'si', table: 't', columns: ['id', 'v'] },
      key: coordinator.plan.table.key,
      range: coordinator.plan.ranges[0]!,
      partition: 0,
      name: 'si/part-0000.csv',
    };
    assert.equal(parsePartition(base).snapshotDigest, undefined);
    const full = parsePartition({ ...base, snapshotDigest: digestSourceToken(coordinator.plan.snapshotText), source: coordinator.plan.source });
    assert.deepEqual(full.source, coordinator.plan.source);
    assert.throws(() => parsePartition({ ...base, snapshotDigest: 'not a digest' }), { code: ErrorCode.INPUT_INVALID });
  });

  it('a copyPartition request recorded from older workflow code still parses (no digest, identity or lock timeout in it)', () => {
    const recorded = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'test', 'histories', 'partitioned-awaiting-commit.json'), 'utf8')) as {
      history: { events: { activityTaskScheduledEventAttributes?: { activityType: { name: string }; input: { payloads: { data: string }[] } } }[] };
    };
    const scheduled = recorded.history.events.find((e) => e.activityTaskScheduledEventAttributes?.activityType.name === 'copyPartition')!;
    const raw = JSON.parse(Buffer.from(scheduled.activityTaskScheduledEventAttributes!.input.payloads[0]!.data, 'base64').toString('utf8'));
    assert.equal(raw.snapshotDigest, undefined);
    const req = parsePartition(raw);
    assert.equal(req.source, undefined);
    assert.equal(req.input.timeouts.lockTimeoutMs, 30_000);
  });
});

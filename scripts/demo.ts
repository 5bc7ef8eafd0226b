/**
 * `npm run demo`: PostgreSQL and a Temporal dev server (started or reused), a seeded table of
 * mixed types, a worker, and one 4-partition extraction; prints the receipt, the output folder
 * and the run's Web UI address, then keeps the UI up until Ctrl-C (`-- --exit` to end at once).
 *
 * `-- --outcome committed|failed|unknown` picks the target owner's answer (default `unknown`,
 * which retains the files so you can look at them). `-- --s3` writes to a local S3 server
 * (SeaweedFS, started here) under s3://extracts/demo instead of ./extracts.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { Client as PgClient } from 'pg';
import { reportCommit, startExtraction, waitForManifest } from '../src/client';
import { redactUrl } from '../src/redact';
import { projectRoot } from '../devenv/project-root';
import { startPostgres } from '../devenv/postgres-service';
import { startS3 } from '../devenv/s3-service';
import { startDevServer } from '../devenv/temporal-dev-server';
import type { TargetCommitOutcome } from '../src/contract/extraction-types';
import { s3ClientFromEnv } from '../src/storage/s3-client';
import { createExtractionWorker } from '../src/worker/worker';

const ROWS = Number(process.env.DEMO_ROWS ?? 200_000);

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function seed(url: string): Promise<void> {
  const pg = new PgClient({ connectionString: url });
  await pg.connect();
  try {
    const have = await pg.query(`SELECT count(*)::int AS n FROM demo.orders`).catch(() => null);
    if (have?.rows[0].n === ROWS) return;
    await pg.query(`DROP SCHEMA IF EXISTS demo CASCADE; CREATE SCHEMA demo`);
    await pg.query(`CREATE TABLE demo.orders (
      id bigint PRIMARY KEY, customer text NOT NULL, amount numeric(12,2), placed_at timestamptz,
      shipped boolean, tags text[], payload jsonb, ref uuid)`);
    await pg.query(
      `INSERT INTO demo.orders
         SELECT g, 'customer ' || (g % 997), round((random() * 1000)::numeric, 2),
                timestamptz '2026-01-01 00:00:00+00' + g * interval '37 seconds', g % 3 = 0,
                ARRAY['t' || (g % 5), 'x'], jsonb_build_object('n', g, 'note', 'line "' || g || '", with comma'),
                md5(g::text)::uuid
           FROM generate_series(1, $1::int) g`,
      [ROWS],
    );
    await pg.query('ANALYZE demo.orders');
  } finally {
    await pg.end();
  }
}

async function run(): Promise<void> {
  // The demo stops on Ctrl-C itself: the Runtime's own handler would shut the worker down and leave the services running.
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const interrupted = new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
  const exitAtOnce = process.argv.includes('--exit');
  const outcome = (argValue('--outcome') ?? 'unknown') as TargetCommitOutcome;
  // What was started, stopped in reverse order whatever happens after it (a failed seed, a Ctrl-C, a failed run).
  const stops: (() => Promise<unknown>)[] = [];
  try {
    const state = join(projectRoot(), '.pg-extract');
    mkdirSync(state, { recursive: true });
    const pg = await startPostgres({ dataDir: join(state, 'postgres'), port: Number(process.env.DEMO_PG_PORT ?? 54329) });
    stops.push(() => pg.stop());
    const temporal = await startDevServer({ dbFilename: join(state, 'temporal.db'), logFile: join(state, 'temporal.log') });
    stops.push(() => temporal.stop());
    const outRoot = join(projectRoot(), 'extracts');
    const s3 = process.argv.includes('--s3') ? await startS3() : null;
    if (s3) stops.push(() => s3.stop());
    if (s3) await s3.createBucket('extracts');
    console.log(`PostgreSQL  ${redactUrl(pg.url)} (${pg.origin})`);
    if (s3) console.log(`S3          ${s3.env.AWS_ENDPOINT_URL_S3} (SeaweedFS), bucket extracts`);
    console.log(`Temporal    ${temporal.address}  Web UI ${temporal.uiUrl}`);
    await seed(pg.url);
    console.log(`seeded demo.orders with ${ROWS} rows`);

    const connection = await NativeConnection.connect({ address: temporal.address });
    stops.push(() => connection.close());
    const taskQueue = 'pg-extract-demo';
    const worker = await createExtractionWorker({
      connection,
      taskQueue,
      outputRoot: outRoot,
      sourceUrl: () => pg.url,
      ...(s3 ? { s3Client: () => s3ClientFromEnv(s3.env) } : {}),
    });
    const running = worker.run();
    stops.push(async () => {
      worker.shutdown();
      await running;
    });
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
    stops.push(() => client.connection.close());
    const demo = async (): Promise<void> => {
      const handle = await startExtraction(client, { table: 'demo.orders', partitions: 4, ...(s3 ? { outDir: 's3://extracts/demo' } : {}) }, { taskQueue });
      console.log(`workflow    ${temporal.uiUrl}/namespaces/default/workflows/${encodeURIComponent(handle.workflowId)}`);
      const manifest = await waitForManifest(handle);
      console.log('extraction receipt:');
      console.log(JSON.stringify(manifest.extractionReceipt, null, 2));
      console.log(`rows ${manifest.totals.rows} (seeded ${ROWS}), bytes ${manifest.totals.bytes}, files:`);
      for (const f of manifest.files) console.log(`  ${f.path}`);
      const terminal = await reportCommit(client, handle.workflowId, { outcome, operationId: 'demo' });
      console.log('terminal receipt:');
      console.log(JSON.stringify(terminal, null, 2));
      if (manifest.totals.rows !== ROWS) throw new Error(`exported ${manifest.totals.rows} rows, seeded ${ROWS}`);
      if (!exitAtOnce) {
        console.log(`\nWeb UI stays up at ${temporal.uiUrl} — Ctrl-C to stop.`);
        await interrupted;
      }
    };
    await Promise.race([demo(), interrupted]);
  } finally {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => console.error(err));
  }
}

run().catch((err) => {
  console.error(err);
  process.exit(1);
});

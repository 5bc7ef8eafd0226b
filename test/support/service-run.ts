/**
 * A test run in miniature, as its own process: starts a throwaway PostgreSQL, Temporal dev server
 * and S3 server (they record their pids in PG_EXTRACT_SERVICE_PIDS) and prints one JSON line.
 * SIGTERM stops them and exits; SIGKILL leaves them running, like a run that crashed.
 */
import { startPostgres } from '../../devenv/postgres-service';
import { startS3 } from '../../devenv/s3-service';
import { startDevServer } from '../../devenv/temporal-dev-server';

async function main(): Promise<void> {
  const [pg, temporal, s3] = await Promise.all([startPostgres(), startDevServer({ freePorts: true }), startS3()]);
  const idle = setInterval(() => undefined, 60_000);
  process.once('SIGTERM', () => {
    clearInterval(idle);
    void Promise.all([temporal.stop(), pg.stop(), s3.stop()]);
  });
  console.log(JSON.stringify({ postgres: pg.origin }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

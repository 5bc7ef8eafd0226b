/**
 * A set whose batch a failed copy stops: two views in `schema`, each its own group (one per lane),
 * `slow` taking a minute to read and `broken` failing on its third row (division by zero, SQLSTATE
 * 22012). Used by the live test of the stop and by the history that records it.
 */
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import { admin } from './database';

/** Makes `schema` afresh with the two views; returns the request that copies them, each copy tried once. */
export async function stoppingBatch(schema: string): Promise<ExtractionRequest> {
  await admin().query(`
    DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema};
    CREATE VIEW ${schema}.slow AS SELECT x, pg_sleep(0.5) IS NULL AS slept FROM generate_series(1, 120) x;
    CREATE VIEW ${schema}.broken AS SELECT x, 1 / (x - 3) AS y FROM generate_series(1, 5) x;
  `);
  return {
    tables: [`${schema}.slow`, `${schema}.broken`],
    maxInFlight: 2,
    partitionRetry: { maximumAttempts: 1 },
    // A copy learns of its cancellation with the next heartbeat the SDK sends: at most 0.8 × this later.
    timeouts: { partitionHeartbeatMs: 2000 },
  };
}

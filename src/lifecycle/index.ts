/**
 * The pure lifecycle core: receipts, the authority that owns them, the terminal decision, the
 * failure-to-outcome mapping and the staging guard. Nothing here talks to PostgreSQL or Temporal or
 * touches node:fs or node:crypto (the exactly-once file release is src/storage/file-release.ts, the
 * source token digest src/postgres/source-token.ts), so the workflow may import it.
 *
 * @example
 * const authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.postgresqlServer });
 * authority.acquireSnapshot(SnapshotAuthority.repeatableRead, digestSourceToken(snapshotText), serverTime);
 * const receipt = authority.complete([{ name: 'part-0.csv', rows, bytes, sha256 }], serverTime2);
 */
export * from './receipt';
export * from './utc-timestamp';
export * from './authority';
export * from './terminal';
export * from './outcome-mapping';
export * from './staging-guard';

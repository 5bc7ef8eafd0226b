/**
 * The pure lifecycle core: receipts, the authority that owns them, the terminal decision, the
 * exactly-once file release and the staging guard. Nothing here talks to PostgreSQL or Temporal.
 *
 * @example
 * const authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.postgresqlServer });
 * authority.acquireSnapshot(SnapshotAuthority.repeatableRead, digestSourceToken(snapshotText), serverTime);
 * const receipt = authority.complete([{ name: 'part-0.csv', rows, bytes, sha256 }], serverTime2);
 */
export * from './receipt';
export * from './utc-timestamp';
export * from '../postgres/source-token';
export * from './authority';
export * from './terminal';
export * from '../storage/file-release';
export * from './outcome-mapping';
export * from './staging-guard';

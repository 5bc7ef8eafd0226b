/**
 * What a retried load recognises as its own, in one place: each load's intent digest, which the
 * commit fence records with the operation id and a retry compares its own against, and the stem
 * of an operation's staging table names, by which a retry finds what an earlier attempt left. The
 * fence tables of targets already hold these digests: each formula's exact string must not change.
 */
import { createHash } from 'node:crypto';

/** A table as a digest names it: `schema.table`, unquoted. */
interface NamedTable {
  schema: string;
  table: string;
}

/** A file as a digest knows it: its manifest entry's rows and sha256. */
interface DigestedFile {
  rows: number;
  sha256: string;
}

type Mode = 'append' | 'replace';

/** The digest of what a files load intends to write: the target table, the mode, then every file's rows and sha256, in order. */
export function filesIntentDigest(request: NamedTable & { mode: Mode; files: readonly DigestedFile[] }): string {
  const h = createHash('sha256');
  h.update(`${request.schema}.${request.table}:${request.mode}\n`);
  for (const f of request.files) h.update(`${f.rows}:${f.sha256}\n`);
  return `sha256:${h.digest('hex')}`;
}

/** The digest of what a set's load intends to write: each target table with its files' rows and sha256, in order. */
export function setIntentDigest(request: { mode: Mode; tables: readonly (NamedTable & { files: readonly DigestedFile[] })[] }): string {
  const h = createHash('sha256');
  h.update(`set:${request.mode}\n`);
  for (const t of request.tables) {
    h.update(`${t.schema}.${t.table}\n`);
    for (const f of t.files) h.update(`${f.rows}:${f.sha256}\n`);
  }
  return `sha256:${h.digest('hex')}`;
}

/** An internal query's intent: this table read into that one in this mode (the read itself is not known before it runs). */
export function internalIntentDigest(from: NamedTable, into: NamedTable, mode: Mode): string {
  return `sha256:${createHash('sha256').update(`internal:${from.schema}.${from.table}->${into.schema}.${into.table}:${mode}`).digest('hex')}`;
}

/** A stream's intent: the plan's table streamed into the request's in this mode (a retry's fresh snapshot is the same intent). */
export function streamIntentDigest(request: NamedTable & { plan: { table: NamedTable }; mode: Mode }): string {
  const { schema, table } = request.plan.table;
  return `sha256:${createHash('sha256').update(`stream:${schema}.${table}->${request.schema}.${request.table}:${request.mode}`).digest('hex')}`;
}

/** How every staging table's name begins: what tests and an operator look for. */
export const STAGING_PREFIX = 'pg_extract_stg_';

/** `pg_extract_stg_` and the first 12 hex digits of sha256(`operationId`): the stem of that operation's staging table names. */
export function operationStagingStem(operationId: string): string {
  return `${STAGING_PREFIX}${createHash('sha256').update(operationId).digest('hex').slice(0, 12)}`;
}

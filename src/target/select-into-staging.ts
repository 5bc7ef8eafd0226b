/**
 * Internal query: source and target are the same database, so no file and no cursor. The
 * target session runs `INSERT INTO <temporary staging> SELECT …` under the owned staging guard; the
 * extraction window is that statement, bracketed by the server clock. No snapshot is claimed:
 * the statement's own snapshot is not one a receipt can prove. Completion is not target commit.
 */
import { randomBytes } from 'node:crypto';
import type { ClientBase } from 'pg';
import { ClockAuthority, ExtractResult, ExtractionLifecycleAuthority, ownedStagingHandle } from '../lifecycle';
import { type ResolvedTable, selectSql } from '../postgres/catalog';
import { serverNow } from '../postgres/server-clock';
import { quoteQualified } from '../postgres/sql';
import { withServerSearchPath } from '../postgres/session';
import { STAGING_PREFIX } from './load-identity';

/** The staging table the caller owns once {@link insertSelectIntoStaging} resolves. */
export interface StagingTable {
  schema: string;
  name: string;
  rows: number;
}

/** Options for {@link insertSelectIntoStaging}. */
export interface InternalQueryOptions {
  signal?: AbortSignal;
  /** Runs after the INSERT, before ownership passes (contract checks); a rejection drops staging. */
  validate?: (staging: StagingTable) => Promise<void>;
}

export async function insertSelectIntoStaging(
  target: ClientBase,
  source: ResolvedTable,
  options: InternalQueryOptions = {},
): Promise<ExtractResult<StagingTable>> {
  const authority = new ExtractionLifecycleAuthority({ clockAuthority: ClockAuthority.postgresqlServer });
  // Temporary: the session that fills it moves it, so it needs no CREATE on any schema, writes no
  // WAL for rows it holds only until the move, and cannot outlive the session.
  const schema = 'pg_temp';
  const name = `${STAGING_PREFIX}${randomBytes(6).toString('hex')}`;
  const staging = quoteQualified(schema, name);
  const { result } = await ownedStagingHandle({
    signal: options.signal,
    // DDL fires the target's event triggers, if any: under its role's path.
    create: async () => {
      await withServerSearchPath(target, () => target.query(`CREATE TEMPORARY TABLE ${staging} AS ${selectSql(source)} WITH NO DATA`));
      return staging;
    },
    drop: async () => void (await withServerSearchPath(target, () => target.query(`DROP TABLE IF EXISTS ${staging}`))),
    materialize: async () => {
      authority.acquire(await serverNow(target));
      // The staging table was made from the same select: its columns are the select's, in order (none for a table without any).
      // Read with row security off, as every source read is (../postgres/session.ts): a policy fails the read rather than hiding rows.
      // Only for this statement: the move into the target that follows keeps the session's value.
      const { rows } = await target.query<{ was: string }>(`SELECT current_setting('row_security') AS was, set_config('row_security', 'off', true)`);
      // The read may call the source's own code (a view's functions), which resolves names as for any query of the role.
      const inserted = await withServerSearchPath(target, () => target.query(`INSERT INTO ${staging} ${selectSql(source)}`));
      await target.query(`SELECT set_config('row_security', $1, true)`, [rows[0]!.was]);
      const completedAt = await serverNow(target);
      const table: StagingTable = { schema, name, rows: inserted.rowCount ?? 0 };
      await options.validate?.(table);
      // What was read is rows of the source, moved by one statement: no file, so no bytes or checksum.
      authority.complete([{ name: `${source.schema}.${source.table}`, rows: table.rows, bytes: null, sha256: null }], completedAt);
      return table;
    },
  });
  return new ExtractResult(result, authority);
}

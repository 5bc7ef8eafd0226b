/**
 * How a load's files reach one target table inside the caller's transaction: COPYed straight into
 * the table where COPY has the effect an INSERT would have (each row written once), otherwise into
 * a temporary staging table moved in by `INSERT … SELECT`, which applies what COPY would bypass or
 * refuse. Either way every file is checked against its manifest entry (rows and sha256) as it is
 * read, and a mismatch fails the transaction, so nothing of it can commit.
 */
import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { ErrorCode, PgExtractError } from '../errors';
import { FailureDisposition, ownedStagingHandle } from '../lifecycle';
import type { ExportFormat } from '../contract/formats';
import { fromItem } from '../postgres/catalog';
import { copyInSql } from '../postgres/export-format';
import { withServerSearchPath } from '../postgres/session';
import { quoteIdent, quoteQualified } from '../postgres/sql';
import { decompressStage } from '../storage/file-compression';
import { operationStagingStem } from './load-identity';
import { refuseCascadingReplace } from './replace-cascades';
import type { LoadFile } from './loader';

/** One target table and the files that fill it. */
export interface TableFill {
  schema: string;
  table: string;
  files: LoadFile[];
  format: ExportFormat;
  mode: 'append' | 'replace';
  /**
   * The files' columns in file order: each field loads into the target column of its name (the
   * target's order, and its other columns, may differ). Absent (a load scheduled by an earlier release): by position.
   */
  columns?: readonly string[];
  /** Names the staging table, if one is needed: the load's operation id and the table's place in the load. */
  operationId: string;
  stagingSuffix?: string;
}

/**
 * Fills one table on `client` inside its open transaction; returns the rows. `onChunk` gets each
 * chunk's size as it is read. `replace` empties the table first, in the same transaction.
 */
export async function fillTable(client: Client, fill: TableFill, signal: AbortSignal | undefined, onChunk: (bytes: number) => void): Promise<number> {
  const target = quoteQualified(fill.schema, fill.table);
  const { direct, relkind } = await targetShape(client, fill.schema, fill.table);
  // Files of a table with no columns hold empty lines, which a COPY into the target's columns would read as NULLs:
  // staging takes them as rows of no column, and the move fills the target's columns as an INSERT does.
  if (direct && fill.columns?.length !== 0) {
    return withServerSearchPath(client, async () => {
      if (fill.mode === 'replace') await emptyForReplace(client, { ...fill, relkind });
      return copyFiles(client, copyInSql(target, fill.format, fill.columns), fill.files, fill.format, signal, onChunk);
    });
  }
  const staging = stagingName(fill.operationId, fill.stagingSuffix ?? '');
  await client.query('SAVEPOINT pg_extract_staging');
  const { result } = await ownedStagingHandle({
    // Created inside the load's transaction: dropping is rolling back to before it, which works
    // even when a failed COPY has aborted the transaction.
    // The staging table has the target's column types: a domain's CHECK runs as the COPY fills it.
    create: async () => void (await withServerSearchPath(client, () => client.query(createStagingSql(staging, target, fill.columns, 'TEMPORARY')))),
    drop: async () => void (await client.query('ROLLBACK TO SAVEPOINT pg_extract_staging')),
    materialize: async () => {
      const copy = copyInSql(staging, fill.format, fill.columns);
      const rows = await withServerSearchPath(client, () => copyFiles(client, copy, fill.files, fill.format, signal, onChunk));
      signal?.throwIfAborted();
      await moveIntoTarget(client, staging, { ...fill, relkind }, fill.mode, fill.columns);
      return rows;
    },
  });
  return result;
}

/**
 * `direct`: whether COPY into `schema.table` does what INSERT would: a plain or partitioned table
 * without row security (COPY FROM refuses it), rules (COPY ignores them), a generated column (COPY
 * expects one column fewer than the file holds) or an enabled BEFORE INSERT row trigger on it or
 * one of its partitions (one that returns NULL, as a trigger routing rows to an inheritance child
 * does, leaves the row out of COPY's count, which would then disagree with the file's). Such
 * targets are filled through staging, so they load or fail as with INSERT (see {@link
 * moveIntoTarget}), and each file is counted as staging takes it. A GENERATED ALWAYS identity
 * column loads directly: COPY keeps the file's values, as the move does. `relkind`: what a replace
 * empties (see {@link withRelkinds}).
 */
async function targetShape(client: Client, schema: string, table: string): Promise<{ direct: boolean; relkind: string }> {
  const r = await client.query<{ direct: boolean; relkind: string }>(
    `SELECT c.relkind IN ('r', 'p') AND NOT c.relrowsecurity AND NOT c.relhasrules
            AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                             WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated <> '')
            -- tgtype bits: ROW 1, BEFORE 2, INSERT 4.
            AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                             WHERE (t.tgrelid = c.oid OR t.tgrelid IN (SELECT relid FROM pg_catalog.pg_partition_tree(c.oid)))
                               AND t.tgtype & 7 = 7 AND t.tgenabled <> 'D') AS direct,
            c.relkind::text AS relkind
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    [schema, table],
  );
  return { direct: r.rows[0]?.direct === true, relkind: r.rows[0]?.relkind ?? '' };
}

/**
 * `CREATE <persistence> TABLE staging …` for files with `columns`: those columns of `target` alone, typed
 * as there, without constraints, so the target's other columns (an identity, a default) are filled
 * by the move's INSERT as an INSERT fills them, and a name the target lacks fails here naming it.
 * Without `columns` (a load scheduled by an earlier release), the target's shape with its defaults.
 * TEMPORARY for staging that one session fills and moves (`staging` in `pg_temp`), UNLOGGED for
 * staging other sessions fill.
 */
export function createStagingSql(staging: string, target: string, columns: readonly string[] | undefined, persistence: 'TEMPORARY' | 'UNLOGGED'): string {
  if (!columns) return `CREATE ${persistence} TABLE ${staging} (LIKE ${target} INCLUDING DEFAULTS)`;
  return `CREATE ${persistence} TABLE ${staging} AS SELECT ${columns.map(quoteIdent).join(', ')} FROM ${target} WITH NO DATA`;
}

/**
 * A load's staging table, named after its operation (and its place in a set's load): a temporary
 * table, so the load needs no CREATE on the target's schema (only TEMP on its database, which
 * PostgreSQL grants to PUBLIC), and nothing of it can outlive the session.
 */
function stagingName(operationId: string, suffix: string): string {
  return quoteQualified('pg_temp', `${operationStagingStem(operationId)}${suffix}`);
}

/**
 * The target tables with their relkinds, for DELETE and TRUNCATE to name their own rows through
 * ../postgres/catalog.ts `fromItem`: `ONLY "s"."t"` for a table or foreign table, so a replace
 * empties no inheritance child outside the load (the extract reads a parent's own rows too); a
 * partitioned table whole (`ONLY` would empty nothing or be refused). A table that does not exist
 * gets relkind '' and is named plainly, and the statement naming it fails as it would have.
 */
export async function withRelkinds<T extends { schema: string; table: string }>(client: Client, tables: readonly T[]): Promise<(T & { relkind: string })[]> {
  const r = await client.query<{ relkind: string | null }>(
    `SELECT c.relkind::text AS relkind
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(schema, name, n)
       LEFT JOIN pg_catalog.pg_namespace ns ON ns.nspname = t.schema
       LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = ns.oid AND c.relname = t.name
      ORDER BY t.n`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  return tables.map((t, i) => ({ ...t, relkind: r.rows[i]?.relkind ?? '' }));
}

/**
 * `replace`'s emptying of one target (named as {@link withRelkinds} says), in the load's transaction.
 * SHARE ROW EXCLUSIVE first, which no other writer holds with it: a DELETE alone deletes the rows its
 * statement's snapshot sees, so a second replace that waited on the first's row locks skipped the
 * first's new rows when it committed, and the table kept both loads' rows. Behind the lock, the
 * DELETE takes its snapshot after the other load's COMMIT. Readers go on (ACCESS SHARE), as with the
 * DELETE alone; writers wait for the load's end, as a TRUNCATE makes them wait. Tables only: LOCK TABLE
 * refuses a foreign table, and on a view it locks the tables under it with rights the view's owner may
 * lack where its own triggers write (a view is emptied as before). A table another table's foreign key
 * references with ON DELETE CASCADE, SET NULL or SET DEFAULT is refused before the DELETE (see replace-cascades.ts).
 */
export async function emptyForReplace(client: Client, target: { schema: string; table: string; relkind: string }): Promise<void> {
  if (target.relkind === 'r' || target.relkind === 'p') {
    await client.query(`LOCK TABLE ${fromItem(target)} IN SHARE ROW EXCLUSIVE MODE`);
    // Behind the lock, which a new foreign key on the table waits for: the keys seen are the keys the DELETE meets.
    await refuseCascadingReplace(client, target);
  }
  await client.query(`DELETE FROM ${fromItem(target)}`);
}

/**
 * Staging → target in the caller's transaction: `replace` empties the target's own rows first (see
 * {@link withRelkinds}). `columns` (the loaded columns, named alike in staging and target) move by
 * name; without them (a load scheduled by an earlier release), columns pair by position, as
 * `INSERT … SELECT *` pairs them. The target's own rules apply, but for what a copy of a table needs: a GENERATED ALWAYS
 * identity keeps the copied values (`OVERRIDING SYSTEM VALUE`, as COPY, pg_dump and pgcopydb keep
 * them; the rows of other tables refer to them), and a generated column is left to the target to
 * compute from the row (INSERT refuses a value for it, and pg_dump does not dump one).
 */
export async function moveIntoTarget(
  client: Client,
  staging: string,
  target: { schema: string; table: string; relkind: string },
  mode: 'append' | 'replace',
  columns?: readonly string[],
): Promise<void> {
  const insert = await moveSql(client, staging, quoteQualified(target.schema, target.table), columns);
  await withServerSearchPath(client, async () => {
    if (mode === 'replace') await emptyForReplace(client, target);
    await client.query(insert);
    await client.query(`DROP TABLE ${staging}`);
  });
}

/** The move's INSERT: by name when `columns` are given, else by position (`SELECT *` unless the target has a generated column or a GENERATED ALWAYS identity). */
async function moveSql(client: Client, staging: string, target: string, columns?: readonly string[]): Promise<string> {
  const columnsOf = (relation: string) =>
    client.query<{ name: string; generated: boolean; always: boolean }>(
      `SELECT attname AS name, attgenerated <> '' AS generated, attidentity = 'a' AS always
         FROM pg_catalog.pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
      [relation],
    );
  const into = (await columnsOf(target)).rows;
  const overriding = into.some((c) => c.always) ? ' OVERRIDING SYSTEM VALUE' : '';
  if (columns) {
    // A name the target lacks stays in the list, so the INSERT fails naming it.
    const generated = new Set(into.filter((c) => c.generated).map((c) => c.name));
    const moved = columns.filter((c) => !generated.has(c)).map(quoteIdent);
    if (moved.length === 0) return `INSERT INTO ${target} SELECT FROM ${staging}`;
    return `INSERT INTO ${target} (${moved.join(', ')})${overriding} SELECT ${moved.join(', ')} FROM ${staging}`;
  }
  // A staging column beyond the target's stays in the SELECT, so the INSERT fails as `SELECT *` would.
  const from = (await columnsOf(staging)).rows;
  const kept = from.map((c, i) => ({ from: c.name, into: into[i] })).filter((c) => !c.into?.generated);
  if (kept.length === 0 || !into.some((c) => c.generated || c.always)) return `INSERT INTO ${target} SELECT * FROM ${staging}`;
  const names = kept.flatMap((c) => (c.into ? [quoteIdent(c.into.name)] : []));
  return `INSERT INTO ${target} (${names.join(', ')})${overriding} SELECT ${kept.map((c) => quoteIdent(c.from)).join(', ')} FROM ${staging}`;
}

/** Runs `copy` (a COPY … FROM STDIN) once per file, each verified against its manifest entry (rows and sha256) before the next; returns the rows. */
async function copyFiles(
  client: Client,
  copy: string,
  files: LoadFile[],
  format: ExportFormat,
  signal: AbortSignal | undefined,
  onChunk: (bytes: number) => void,
): Promise<number> {
  let total = 0;
  for (const file of files) {
    signal?.throwIfAborted();
    const loaded = await copyFileInto(client, copy, file, format, onChunk);
    if (loaded.rows !== file.rows || loaded.sha256 !== file.sha256) {
      throw Object.assign(new PgExtractError(ErrorCode.TARGET_CHECKSUM_MISMATCH, `${file.path} does not match its manifest entry (rows or sha256)`), {
        disposition: FailureDisposition.cleanupSafe,
      });
    }
    total += loaded.rows;
  }
  return total;
}

class Hasher extends Transform {
  readonly hash = createHash('sha256');
  constructor(private readonly onChunk: (bytes: number) => void) {
    super();
  }
  override _transform(chunk: Buffer, _e: BufferEncoding, done: TransformCallback): void {
    this.hash.update(chunk);
    this.onChunk(chunk.length);
    done(null, chunk);
  }
}

/** Copies one file with `copy`, hashing (and counting) the bytes as they are read; returns rows and sha256. */
async function copyFileInto(
  client: Client,
  copy: string,
  file: LoadFile,
  format: ExportFormat,
  onChunk: (bytes: number) => void,
): Promise<{ rows: number; sha256: string }> {
  // Opened before the COPY starts: a file that cannot be opened must not leave the session mid-COPY.
  const bytes = await file.open();
  const sink = client.query(copyFrom(copy));
  const hasher = new Hasher(onChunk);
  const decompress = decompressStage(format);
  await (decompress ? pipeline(bytes, hasher, decompress, sink) : pipeline(bytes, hasher, sink));
  return { rows: sink.rowCount, sha256: hasher.hash.digest('hex') };
}

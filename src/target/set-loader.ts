/**
 * The built-in loader for a run of several tables: every table's files into its own target table
 * in ONE target transaction, behind the same commit fence as one table's load. `replace` empties
 * the whole set in one TRUNCATE first; tables fill parents first along the target's foreign keys
 * (see table-fill.ts for how, and how each file is verified), so every key holds at COMMIT. Any
 * failure rolls the transaction back: nothing lands and no staging table stays.
 */
import { type Client, DatabaseError } from 'pg';
import type { ExportFormat } from '../contract/formats';
import { formatTableName } from '../contract/identifiers';
import { type LoadControl, type LoadFile, type LoadResult, fencedTransaction } from './loader';
import { fromItem } from '../postgres/catalog';
import { withServerSearchPath } from '../postgres/session';
import { requireBinaryTypes } from './binary-types';
import { setIntentDigest } from './load-identity';
import { sequencesPastRows } from './sequences';
import { emptyForReplace, fillTable, withRelkinds } from './table-fill';

export interface SetLoadTable {
  /** The resolved target table. */
  schema: string;
  table: string;
  files: LoadFile[];
  /** The files' columns in file order, loaded by name; absent: by position (a load scheduled by an earlier release). */
  columns?: readonly string[];
  /** With binary files: each column's source type (see binary-types.ts). */
  columnTypes?: readonly string[];
}

export interface SetLoadRequest {
  tables: SetLoadTable[];
  format: ExportFormat;
  mode: 'append' | 'replace';
  /** Stable per extraction attempt: the same load retried has the same id. */
  operationId: string;
}

/**
 * The order to fill the tables in: a table after every table of the set it references (the
 * target's foreign keys). Tables in a cycle keep the request's order; only deferrable keys let such a cycle load.
 */
async function parentsFirst(client: Client, tables: { schema: string; table: string }[]): Promise<number[]> {
  const edges = await client.query<{ child: number; parent: number }>(
    `WITH t AS (
       SELECT u.i::int - 1 AS i, c.oid FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(s, n, i)
       JOIN pg_namespace ns ON ns.nspname = u.s JOIN pg_class c ON c.relnamespace = ns.oid AND c.relname = u.n)
     SELECT DISTINCT child.i AS child, parent.i AS parent FROM pg_constraint k
       JOIN t child ON child.oid = k.conrelid JOIN t parent ON parent.oid = k.confrelid
     WHERE k.contype = 'f' AND k.conrelid <> k.confrelid`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  const parents = tables.map(() => new Set<number>());
  for (const { child, parent } of edges.rows) parents[child]!.add(parent);
  const order: number[] = [];
  const placed = new Set<number>();
  for (let progressed = true; progressed;) {
    progressed = false;
    tables.forEach((_, i) => {
      if (placed.has(i) || [...parents[i]!].some((p) => !placed.has(p))) return;
      order.push(i);
      placed.add(i);
      progressed = true;
    });
  }
  return [...order, ...tables.map((_, i) => i).filter((i) => !placed.has(i))];
}

/**
 * A set's `replace`: its tables emptied by one TRUNCATE, so tables of the set that reference each
 * other empty at once; a view or a foreign table, which TRUNCATE refuses or its wrapper may not
 * support, by a DELETE of its rows after it, as a one-table `replace` empties it. A table that does
 * not exist stays in the TRUNCATE, which fails naming it.
 */
async function emptyTargets(client: Client, tables: readonly (SetLoadRequest['tables'][number] & { relkind: string })[]): Promise<void> {
  const deleted = (t: { relkind: string }): boolean => t.relkind === 'v' || t.relkind === 'f';
  const truncated = tables.filter((t) => !deleted(t));
  await withServerSearchPath(client, async () => {
    if (truncated.length) await client.query(`TRUNCATE ${truncated.map(fromItem).join(', ')}`).catch(namingReferencingTable);
    for (const t of tables.filter(deleted)) await namingTable(t, () => emptyForReplace(client, t));
  });
}

/**
 * TRUNCATE's refusal of a table another table references says which two only in its detail (`Table "x"
 * references "y".`, names and no row data): without it, nothing told which of a set's tables, or which
 * table outside it, stopped the load.
 */
function namingReferencingTable(err: unknown): never {
  if (err instanceof DatabaseError && err.code === '0A000' && err.detail) err.message = `${err.message}: ${err.detail}`;
  throw err;
}

/**
 * `work` on one table of the set, a server error it meets prefixed with the table's name: the server's
 * message names a constraint (a unique key's), a value (`invalid input syntax for type integer: "x"`) or
 * nothing of where, and a set loads many tables. (The COPY's context, which names its table, line and
 * column, also quotes the value or the whole line, so it stays out of the report as the detail does.)
 */
async function namingTable<T>(table: { schema: string; table: string }, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof DatabaseError) err.message = `${formatTableName(table)}: ${err.message}`;
    throw err;
  }
}

/** Loads the set on `client` (a fresh target session); failures carry the dispositions {@link loadIntoTarget} documents. */
export async function loadSetIntoTarget(client: Client, request: SetLoadRequest, { signal, onBytes }: LoadControl = {}): Promise<LoadResult> {
  const label = request.tables.map((t) => `${t.schema}.${t.table}`).join(', ');
  return fencedTransaction(
    client,
    request.operationId,
    setIntentDigest(request),
    label,
    async () => {
      await requireBinaryTypes(client, request.format.format, request.tables);
      if (request.mode === 'replace') await emptyTargets(client, await withRelkinds(client, request.tables));
      let total = 0;
      let bytes = 0;
      for (const i of await parentsFirst(client, request.tables)) {
        const fill = { ...request.tables[i]!, format: request.format, mode: 'append' as const, operationId: request.operationId, stagingSuffix: `_${i}` };
        total += await namingTable(fill, () => fillTable(client, fill, signal, (n) => onBytes?.((bytes += n))));
      }
      await sequencesPastRows(client, request.tables);
      return total;
    },
    signal,
  );
}

/**
 * Where each table of a run of several tables loads on the target: `target.schema` keeps the
 * table's name in that schema; `target.tables` maps `source → target` explicitly. Checked at the
 * input (a set without a mapping, a listed table left out, two tables onto one) and again by the
 * loader, which sees the tables a schema resolved to.
 */
import type { z } from 'zod';
import { ErrorCode, PgExtractError } from '../errors';
import { parseSchemaName, parseTableName } from './identifiers';

export interface TargetMapping {
  table?: string;
  schema?: string;
  tables?: Record<string, string>;
  via?: string;
}

type Name = { schema: string; table: string };

/** `schema.table` as the manifest names a file's table (catalog names joined by a dot). */
export function joinedName({ schema, table }: Name): string {
  return `${schema}.${table}`;
}

/**
 * The target table of source table `source` (as a manifest file names it). The part after the
 * first dot is the table: the manifest's joined name cannot tell a dot inside a schema name apart,
 * so the input refuses `target.schema` for a source schema with a dot ({@link checkTargetMapping}).
 */
export function targetTableOf(target: TargetMapping, source: string): Name {
  if (target.schema !== undefined) return { schema: parseSchemaName(target.schema, 'target.schema'), table: source.slice(source.indexOf('.') + 1) };
  const entry = Object.entries(target.tables ?? {}).find(([from]) => joinedName(parseTableName(from, 'target.tables')) === source);
  if (!entry) throw new PgExtractError(ErrorCode.TARGET_MAPPING_INVALID, `target.tables maps no target table for ${source}`, { field: 'target.tables' });
  return parseTableName(entry[1], 'target.tables');
}

/** The input's check of a built-in load: one table takes `target.table`; a set takes a mapping, through files only. */
export function checkTargetMapping(input: { table?: string; tables?: string[]; schema?: string; target?: TargetMapping }, ctx: z.RefinementCtx): void {
  const { target } = input;
  if (!target) return;
  const issue = (path: string, message: string, code: ErrorCode = ErrorCode.TARGET_MAPPING_INVALID): void =>
    ctx.addIssue({ code: 'custom', path: ['target', path], message, params: { code } });
  if (input.table !== undefined) {
    if (target.table === undefined) issue('table', 'give the target table');
    if (target.schema !== undefined || target.tables !== undefined)
      issue('table', 'target.schema and target.tables map several tables; one table takes target.table');
    return;
  }
  if (target.via !== undefined && target.via !== 'files')
    issue('via', `several tables load via files only, not ${target.via}`, ErrorCode.TARGET_VIA_UNSUPPORTED);
  if (target.table !== undefined) issue('table', 'several tables map with target.schema or target.tables, not target.table');
  if ((target.schema === undefined) === (target.tables === undefined)) issue('schema', 'several tables need exactly one of target.schema and target.tables');
  if (target.schema !== undefined) {
    const dotted = sourceSchemas(input).find((schema) => schema.includes('.'));
    if (dotted !== undefined)
      issue(
        'schema',
        `the source schema ${JSON.stringify(dotted)} has a dot in its name, so target.schema cannot tell its tables' names from it; map them with target.tables`,
      );
    const clash = sameNamedTables(input.tables ?? []);
    if (clash) issue('schema', `${clash.join(' and ')} both map onto the one table of that name in target.schema; map them with target.tables`);
  }
  if (target.tables === undefined) return;
  try {
    // Targets are told apart by their parts: `"x.y".z` and `x."y.z"` are two tables.
    const targets = Object.values(target.tables).map((to) => parseTableName(to, 'target.tables'));
    const keys = targets.map(({ schema, table }) => JSON.stringify([schema, table]));
    const twice = keys.findIndex((to, i) => keys.indexOf(to) !== i);
    if (twice >= 0) issue('tables', `two tables map onto ${joinedName(targets[twice]!)}`);
    for (const source of input.tables ?? []) targetTableOf(target, joinedName(parseTableName(source)));
  } catch (err) {
    issue('tables', (err as Error).message, (err as PgExtractError).code ?? ErrorCode.TARGET_MAPPING_INVALID);
  }
}

/**
 * The checks of `target.tables` only a run about to start gets (a running run's steps parse its input again, and a
 * mapping an earlier version accepted must go on being accepted): manifests name a file's table by its joined name, so
 * every key must name, by its parts, a table the run reads, and no two keys may read alike joined (`"a.b".c` and
 * `a."b.c"`, or `users` and `public.users`): either would take another table's rows.
 */
export function checkNewRunTargetMapping(input: { tables?: string[]; schema?: string; target?: TargetMapping }): void {
  const mapping = input.target?.tables;
  if (mapping === undefined) return;
  const refuse = (message: string): never => {
    throw new PgExtractError(ErrorCode.TARGET_MAPPING_INVALID, message, { field: 'target.tables' });
  };
  const keys = Object.keys(mapping).map((from) => ({ from, name: parseTableName(from, 'target.tables') }));
  const joined = keys.map(({ name }) => joinedName(name));
  const alike = joined.findIndex((name, i) => joined.indexOf(name) !== i);
  if (alike >= 0) {
    const [first, second] = keys.filter((_, i) => joined[i] === joined[alike]).map((k) => JSON.stringify(k.from));
    refuse(`target.tables maps ${first} and ${second}, which name the same table in a manifest (${joined[alike]}); keep one`);
  }
  const listed = input.tables && listedTables(input.tables);
  const schema = input.schema;
  for (const { from, name } of keys) {
    const read = listed
      ? listed.some((t) => t.schema === name.schema && t.table === name.table)
      : schema !== undefined && name.schema === parseSchemaName(schema, 'schema');
    if (!read) refuse(`target.tables maps ${JSON.stringify(from)}, which is not a table this run reads${listed ? '' : ` (schema ${schema})`}`);
  }
}

/** Two listed tables of one name in different schemas, which `target.schema` would load into one table; null if none. */
function sameNamedTables(tables: string[]): [string, string] | null {
  const seen = new Map<string, string>();
  for (const parsed of listedTables(tables)) {
    const first = seen.get(parsed.table);
    if (first !== undefined && first !== joinedName(parsed)) return [first, joinedName(parsed)];
    seen.set(parsed.table, joinedName(parsed));
  }
  return null;
}

/** The schemas of a set's source tables as named in the input (names that do not parse are the selection check's to report). */
function sourceSchemas(input: { tables?: string[]; schema?: string }): string[] {
  if (input.schema !== undefined) return parsedOrNone(() => parseSchemaName(input.schema!, 'schema'));
  return listedTables(input.tables ?? []).map((name) => name.schema);
}

/** The listed tables' names that parse: one that does not is the selection check's to report. */
function listedTables(tables: readonly string[]): Name[] {
  return tables.flatMap((name) => parsedOrNone(() => parseTableName(name)));
}

/** `[parse()]`, or none when it throws. */
function parsedOrNone<T>(parse: () => T): T[] {
  try {
    return [parse()];
  } catch {
    return [];
  }
}

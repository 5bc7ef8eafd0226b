/**
 * A partition's range and the key it splits on, as the plan hands them to every copy: one zod
 * schema each (activities parse them at their boundary), types inferred from them. Pure.
 */
import { z } from 'zod';

/** The longest cut the planner keeps: ranges travel in workflow history, once per partition. */
export const MAX_BOUND_LENGTH = 512;

/** Key types the range planner can split. `text` covers the collatable string types: ordered by the column's collation. */
export const keyKindSchema = z.enum(['integer', 'numeric', 'date', 'timestamp', 'timestamptz', 'uuid', 'text']);
export type KeyKind = z.infer<typeof keyKindSchema>;

const bound = z.string().max(MAX_BOUND_LENGTH).nullable();

/** Rows whose key is in [lower, upper); a null end is open (from MIN / through MAX). */
const keyRangeSchema = z.strictObject({ kind: z.literal('key'), lower: bound, upper: bound });
export type KeyRange = z.infer<typeof keyRangeSchema>;

/** Rows whose key IS NULL: exported exactly once, in their own partition. */
const nullRangeSchema = z.strictObject({ kind: z.literal('nulls') });

/** Heap pages [fromPage, toPage) by ctid; toPage null is open. */
const pageRangeSchema = z.strictObject({
  kind: z.literal('pages'),
  fromPage: z.number().int().nonnegative(),
  toPage: z.number().int().nonnegative().nullable(),
});

/** Every row: one partition (empty table, or a single partition). */
const allRowsSchema = z.strictObject({ kind: z.literal('all') });

export const partitionRangeSchema = z.discriminatedUnion('kind', [allRowsSchema, nullRangeSchema, keyRangeSchema, pageRangeSchema]);
export type PartitionRange = z.infer<typeof partitionRangeSchema>;

const name63 = z.string().min(1).max(63);

/** The split key as the catalog resolved it. */
export const splitKeySchema = z.strictObject({
  name: name63,
  kind: keyKindSchema,
  /** The type its boundary literals are cast to; from a fixed list, never from input. */
  sqlType: z.enum(['int8', 'numeric', 'date', 'timestamp', 'timestamptz', 'uuid', 'text', 'bpchar']),
  /** The column's collation (text keys only): boundaries compare under it, as the index and the sample order. */
  collation: z.strictObject({ schema: name63, name: name63 }).optional(),
});
export type SplitKey = z.infer<typeof splitKeySchema>;
export type KeyCollation = NonNullable<SplitKey['collation']>;

/** Which cluster (pg_control_system().system_identifier, as text) and database (oid) a session reads. */
export const sourceIdentitySchema = z.strictObject({
  systemIdentifier: z.string().regex(/^\d{1,20}$/),
  databaseOid: z.number().int().nonnegative().max(0xffff_ffff),
});
export type SourceIdentity = z.infer<typeof sourceIdentitySchema>;

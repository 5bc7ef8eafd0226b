/** A source column as readers need to know it: its name, PostgreSQL type, nullability and enum labels. Pure. */
import { z } from 'zod';

/** A source column as the catalog describes it inside the run's snapshot. */
export const sourceColumnSchema = z.strictObject({
  name: z.string().min(1).max(63),
  /** `format_type(atttypid, atttypmod)`, e.g. `numeric(40,2)`, `integer[]`; a domain's base type, with the typmod the domain declares. */
  pgType: z.string().min(1).max(1000),
  notNull: z.boolean(),
  /** The labels of an enum type, in sort order; null for any other type. */
  enumLabels: z.array(z.string()).nullable(),
});
export type SourceColumn = z.infer<typeof sourceColumnSchema>;

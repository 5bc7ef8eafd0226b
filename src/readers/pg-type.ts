/** Splits a `format_type()` text into what the type mappings need: base name, typmod numbers, array or not. Pure. */

export interface PgType {
  /** The name without typmod and without `[]`, e.g. `timestamp with time zone`, `numeric`. */
  base: string;
  /** The typmod's numbers, e.g. [40, 2] for `numeric(40,2)`; empty without one. */
  args: number[];
  /** An array type: format_type writes one `[]` whatever the dimensions. */
  array: boolean;
}

/** An interval's field restriction (`interval year to month`, `interval day to second(3)`), a typmod written as words. */
const INTERVAL_FIELDS = /^interval (?:year|month|day|hour|minute|second)(?: to (?:month|hour|minute|second))?$/;

export function parsePgType(pgType: string): PgType {
  const array = pgType.endsWith('[]');
  const scalar = array ? pgType.slice(0, -2) : pgType;
  const typmod = /\(([0-9, ]+)\)/.exec(scalar);
  const base = typmod ? `${scalar.slice(0, typmod.index)}${scalar.slice(typmod.index + typmod[0].length)}` : scalar;
  return {
    base: INTERVAL_FIELDS.test(base) ? 'interval' : base,
    args: typmod ? typmod[1]!.split(',').map((n) => Number(n.trim())) : [],
    array,
  };
}

/**
 * The workflow's own check of its input, before it does anything: the input a client or the CLI
 * parsed (parseExtractionInput), its defaults filled in. The workflow bundle carries no schema (see
 * ../contract/commit-report.ts), so this checks the shape the workflow reads, not every rule: a run
 * started with `null`, a bare table name or an unparsed `{ table }` fails with INPUT_INVALID instead
 * of failing its workflow task again and again. Only fields every version's parsed input has are
 * required, so every run ever started replays as it ran; since `input-ranges`, a new run's numbers
 * the workflow itself uses (bounds, attempts, timeouts) must also be whole numbers of at least 1:
 * a set without its bound on copies in flight copied nothing (and completed its receipt), and a
 * zero or negative timeout or retry count failed every workflow task. Since `input-limits`, they
 * must also be within the schema's maximums: a retry interval past Temporal's durations failed
 * every workflow task too.
 */
import { ApplicationFailure, patched } from '@temporalio/workflow';
import type { ExtractionInput } from '../contract/extraction-input';
import { ErrorCode } from '../errors';
import { INPUT_LIMITS, NAME_LENGTHS } from '../contract/input-limits';
import { INPUT_LIMITS_CHECKED, INPUT_NAMES, INPUT_RANGES } from './patches';

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** What is wrong with `raw` as a parsed input, or null. */
function shapeProblem(raw: unknown): string | null {
  if (!isObject(raw)) return 'is not an object';
  const selections = [typeof raw.table === 'string', Array.isArray(raw.tables), typeof raw.schema === 'string'].filter(Boolean).length;
  if (selections !== 1) return 'names its tables in none or several of table, tables and schema';
  for (const key of ['commitDeadlineMs', 'maxSnapshotAttempts'] as const) if (typeof raw[key] !== 'number') return `has no number ${key}`;
  if (!isObject(raw.partitionRetry)) return 'has no partitionRetry';
  const { timeouts } = raw;
  if (!isObject(timeouts)) return 'has no timeouts';
  for (const key of ['holderHeartbeatMs', 'partitionHeartbeatMs', 'partitionStartToCloseMs'] as const) {
    if (typeof timeouts[key] !== 'number') return `has no number timeouts.${key}`;
  }
  return null;
}

type LimitedNumber = keyof typeof INPUT_LIMITS;

/**
 * What is wrong with the numbers the workflow reads from `raw` (of the shape {@link shapeProblem}
 * checks), or null. Those an older client may leave out, and the workflow can do without, are
 * checked only when given; a set's bound on copies in flight is required.
 */
function rangeProblem(raw: Record<string, unknown>, limited: boolean): string | null {
  const timeouts = raw.timeouts as Record<string, unknown>;
  const retry = raw.partitionRetry as Record<string, unknown>;
  const set = raw.table === undefined;
  const numbers: [name: LimitedNumber, value: unknown, required: boolean][] = [
    ['maxInFlight', raw.maxInFlight, set],
    ['commitDeadlineMs', raw.commitDeadlineMs, true],
    ['maxSnapshotAttempts', raw.maxSnapshotAttempts, true],
    ['partitionRetry.maximumAttempts', retry.maximumAttempts, true],
    ['partitionRetry.initialIntervalMs', retry.initialIntervalMs, false],
    ...(['holderHeartbeatMs', 'partitionHeartbeatMs', 'partitionStartToCloseMs', 'loadHeartbeatMs', 'loadStartToCloseMs'] as const).map(
      (key): [LimitedNumber, unknown, boolean] => [`timeouts.${key}`, timeouts[key], key !== 'loadHeartbeatMs' && key !== 'loadStartToCloseMs'],
    ),
  ];
  const max = (name: LimitedNumber) => (limited ? INPUT_LIMITS[name] : Number.MAX_SAFE_INTEGER);
  const bad = numbers.find(
    ([name, value, required]) =>
      (required || value !== undefined) && !(typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 && value <= max(name)),
  );
  if (!bad) return null;
  const [name, value] = bad;
  return `has ${JSON.stringify(value) ?? 'no'} ${name}, where a whole number ${limited ? `from 1 to ${max(name)}` : 'of at least 1'} goes`;
}

/**
 * What is wrong with the names the run's label is made of (status, Web UI's search attribute and
 * details), or null: each a string no longer than the schema allows; and a target's name.
 */
function nameProblem(raw: Record<string, unknown>): string | null {
  const tooLong = (name: unknown, max: number) => typeof name !== 'string' || name.length === 0 || name.length > max;
  if (raw.table !== undefined && tooLong(raw.table, NAME_LENGTHS.table)) return `has a table that is no name of 1 to ${NAME_LENGTHS.table} characters`;
  if (raw.schema !== undefined && tooLong(raw.schema, NAME_LENGTHS.schema)) return `has a schema that is no name of 1 to ${NAME_LENGTHS.schema} characters`;
  if (raw.tables !== undefined && (raw.tables as unknown[]).some((name) => tooLong(name, NAME_LENGTHS.table)))
    return `has tables that are no names of 1 to ${NAME_LENGTHS.table} characters`;
  // A target without its name: a stream load found no target to fail on before its fence, and the run retained its files as maybe committed.
  if (raw.target !== undefined && !(isObject(raw.target) && typeof raw.target.name === 'string' && raw.target.name.length > 0))
    return 'has a target with no name';
  return null;
}

/** Fails the run with INPUT_INVALID unless `raw` has the shape of a parsed input. */
export function requireParsedInput(raw: unknown): asserts raw is ExtractionInput {
  const problem =
    shapeProblem(raw) ??
    (patched(INPUT_RANGES) ? rangeProblem(raw as Record<string, unknown>, patched(INPUT_LIMITS_CHECKED)) : null) ??
    (patched(INPUT_NAMES) ? nameProblem(raw as Record<string, unknown>) : null);
  if (problem) {
    throw ApplicationFailure.nonRetryable(
      `the run's input ${problem}: start runs with startExtraction or the CLI, which parse it (parseExtractionInput)`,
      ErrorCode.INPUT_INVALID,
    );
  }
}

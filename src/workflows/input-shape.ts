/**
 * The workflow's own check of its input, before it does anything: the input a client or the CLI
 * parsed (parseExtractionInput), its defaults filled in. The workflow bundle carries no schema (see
 * ../contract/commit-report.ts), so this checks the shape the workflow reads, not every rule: a run
 * started with `null`, a bare table name or an unparsed `{ table }` fails with INPUT_INVALID instead
 * of failing its workflow task again and again. Only fields every version's parsed input has are
 * required, so every run ever started replays as it ran.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { ExtractionInput } from '../contract/extraction-input';
import { ErrorCode } from '../errors';

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

/** Fails the run with INPUT_INVALID unless `raw` has the shape of a parsed input. */
export function requireParsedInput(raw: unknown): asserts raw is ExtractionInput {
  const problem = shapeProblem(raw);
  if (problem) {
    throw ApplicationFailure.nonRetryable(
      `the run's input ${problem}: start runs with startExtraction or the CLI, which parse it (parseExtractionInput)`,
      ErrorCode.INPUT_INVALID,
    );
  }
}

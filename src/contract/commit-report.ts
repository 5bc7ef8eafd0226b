/**
 * The target owner's commit report: one parser for the client, the CLI, and the workflow's signal
 * and update. Unlike the other messages it is checked by hand rather than by a zod schema: workflow
 * code imports it, and a worker evaluates a workflow's imports afresh for every execution it starts
 * (Temporal's reusable V8 context shares only the SDK's own modules), where loading zod cost about
 * 11 ms of CPU per workflow started, and this schema was the workflow bundle's only use of zod.
 */
import { ErrorCode, PgExtractError } from '../errors';

/** What the target owner can say about its commit. */
export const COMMIT_OUTCOMES = ['committed', 'failed', 'unknown'] as const;
export type TargetCommitOutcome = (typeof COMMIT_OUTCOMES)[number];

/**
 * Longest operation id a report may carry, in Unicode code points: a character beyond the Basic
 * Multilingual Plane (two UTF-16 units) counts once, as the zod schema this parser replaced counted it,
 * so every report accepted before is accepted now (and a recorded signal replays as it ran).
 */
export const OPERATION_ID_MAX_LENGTH = 200;

export interface TargetCommit {
  outcome: TargetCommitOutcome;
  /** The target owner's own id for the load, recorded for audit. */
  operationId?: string;
}

const isOutcome = (value: unknown): value is TargetCommitOutcome => typeof value === 'string' && (COMMIT_OUTCOMES as readonly string[]).includes(value);

/** Extra keys a refusal names at most, each cut to KEY_SHOWN characters. */
const KEYS_SHOWN = 3;
const KEY_SHOWN = 40;

/**
 * A few of `keys`, cut short, and how many more: the refusal's message goes into the update's
 * rejection, which must stay far below Temporal's payload limit whatever a client sent.
 */
function namedKeys(keys: string[]): string {
  const named = keys.slice(0, KEYS_SHOWN).map((key) => JSON.stringify(key.length > KEY_SHOWN ? `${key.slice(0, KEY_SHOWN)}…` : key));
  return keys.length > KEYS_SHOWN ? `${named.join(', ')} and ${keys.length - KEYS_SHOWN} more` : named.join(', ');
}

/** Parses a report or throws INPUT_INVALID naming the first bad field (`input` for the report as a whole). */
export function parseCommitReport(raw: unknown): TargetCommit {
  const invalid = (field: string, message: string) => new PgExtractError(ErrorCode.INPUT_INVALID, `${field}: ${message}`, { field });
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalid('input', 'expected an object');
  // Own enumerable properties only: an inherited `outcome` is not a report, an own `__proto__` key is an extra key.
  const own = new Map(Object.entries(raw));
  const outcome = own.get('outcome');
  if (!isOutcome(outcome)) throw invalid('outcome', `expected one of ${COMMIT_OUTCOMES.join(', ')}`);
  const operationId = own.get('operationId');
  if (operationId !== undefined && typeof operationId !== 'string') throw invalid('operationId', 'expected a string');
  // The string iterator yields code points (a lone surrogate as one), so this counts as zod did.
  if (operationId !== undefined && [...operationId].length > OPERATION_ID_MAX_LENGTH) {
    throw invalid('operationId', `at most ${OPERATION_ID_MAX_LENGTH} characters`);
  }
  const extra = [...own.keys()].filter((key) => key !== 'outcome' && key !== 'operationId');
  if (extra.length > 0) throw invalid('input', `unrecognized key${extra.length > 1 ? 's' : ''}: ${namedKeys(extra)}`);
  return operationId === undefined ? { outcome } : { outcome, operationId };
}

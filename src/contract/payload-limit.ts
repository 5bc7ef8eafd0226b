/**
 * Temporal's limit on one payload (an activity's input or result, a query's answer, a workflow's
 * result) is 2 MB; past it the call fails with TMPRL1103, again on every try. What grows with a
 * run's files (its manifest, its receipt's evidence, a batched partition's files) is checked against
 * this budget first, and fails with RUN_EXCEEDS_PAYLOAD_LIMIT, not retried. Pure.
 */

/**
 * Bytes of JSON one payload may carry: the limit (2 MiB, 2,097,152 bytes, the server's default
 * blob size limit) less room for the payload's envelope and the rest of a result.
 */
export const PAYLOAD_BUDGET_BYTES = 1_950_000;

/** The UTF-8 bytes of `value` as JSON, as a payload carries it. */
export function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value) ?? '').length;
}

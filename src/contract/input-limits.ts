/**
 * The largest value of each number of a run's input: the input schema (./extraction-input.ts)
 * refuses more, and the workflow checks them again for a run started without the schema
 * (../workflows/input-shape.ts), where a retry interval past Temporal's durations failed every
 * workflow task. Plain constants, so the workflow bundle imports them without zod.
 */
const HOUR = 3_600_000;

export const INPUT_LIMITS = {
  maxInFlight: 256,
  commitDeadlineMs: 30 * 24 * HOUR,
  maxSnapshotAttempts: 10,
  'partitionRetry.maximumAttempts': 100,
  'partitionRetry.initialIntervalMs': HOUR,
  'timeouts.holderHeartbeatMs': HOUR,
  'timeouts.partitionHeartbeatMs': HOUR,
  'timeouts.partitionStartToCloseMs': 48 * HOUR,
  'timeouts.lockTimeoutMs': HOUR,
  'timeouts.loadHeartbeatMs': HOUR,
  'timeouts.loadStartToCloseMs': 30 * 24 * HOUR,
} as const;

/**
 * The longest table and schema names of a run's input, in UTF-16 units (as zod counts): the
 * schema refuses longer, and the workflow checks them again (../workflows/input-shape.ts), where a
 * name past the search attribute's 2 KB failed every workflow task.
 */
export const NAME_LENGTHS = { table: 300, schema: 130 } as const;

/** A built-in load attempt's default start-to-close timeout, also the one of runs whose input has none (started by an older client). */
export const DEFAULT_LOAD_START_TO_CLOSE_MS = 12 * HOUR;

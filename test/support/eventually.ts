/** The tests' one poll loop: wait until something shows up, or fail saying what never did. */

/** Options for {@link eventually}. */
export interface EventuallyOptions {
  /** @default 30_000 */
  timeoutMs?: number;
  /** Pause between probes. @default 50 */
  intervalMs?: number;
}

/**
 * Calls `probe` until it returns a value other than undefined, null or false, and returns that
 * value; throws `never: <what>` once `timeoutMs` has passed. `what` may be a function, read at
 * the end, so the message can show the last thing seen.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined | null | false>,
  what: string | (() => string),
  { timeoutMs = 30_000, intervalMs = 50 }: EventuallyOptions = {},
): Promise<T> {
  for (const until = Date.now() + timeoutMs; ;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() >= until) throw new Error(`never: ${typeof what === 'string' ? what : what()} (within ${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

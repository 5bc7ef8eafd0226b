/**
 * Liveness heartbeats on a timer. Progress callbacks update the details; the timer sends them,
 * so a COPY stalled on a lock still heartbeats and a dead worker is noticed by its timeout.
 */
import { Context } from '@temporalio/activity';

/** Heartbeats `details()` now and every {@link heartbeatInterval}; returns the function that stops it. */
export function heartbeatEvery<D>(details: () => D): () => void {
  const ctx = Context.current();
  ctx.heartbeat(details());
  const timer = setInterval(() => ctx.heartbeat(details()), heartbeatInterval());
  return () => clearInterval(timer);
}

/**
 * How often to heartbeat: at most a second, so a cancellation (delivered only in a heartbeat's
 * response) arrives quickly; the SDK throttles what it actually sends to the server.
 */
function heartbeatInterval(): number {
  const timeout = Context.current().info.heartbeatTimeoutMs;
  return Math.max(100, Math.min(1000, Math.floor((timeout ?? 30_000) / 3)));
}

/** Runs `work` heartbeating with no details: a worker that dies in it is noticed by its silence, not its timeout. */
export async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const stop = heartbeatEvery(() => null);
  try {
    return await work();
  } finally {
    stop();
  }
}

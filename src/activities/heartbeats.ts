/**
 * Liveness heartbeats on a timer. Progress callbacks update the details; the timer sends them,
 * so a COPY stalled on a lock still heartbeats and a dead worker is noticed by its timeout.
 */
import { Context } from '@temporalio/activity';

export function heartbeatEvery<D>(intervalMs: number, details: () => D): () => void {
  const ctx = Context.current();
  ctx.heartbeat(details());
  const timer = setInterval(() => ctx.heartbeat(details()), intervalMs);
  return () => clearInterval(timer);
}

/** A third of the heartbeat timeout, so two beats can be lost before the server gives up. */
export function heartbeatInterval(): number {
  const timeout = Context.current().info.heartbeatTimeoutMs;
  return Math.max(200, Math.floor((timeout ?? 30_000) / 3));
}

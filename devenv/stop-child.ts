/**
 * Stops a child process this process started, by its handle (never by name): `signal` first, then
 * SIGKILL if it is still there after `graceMs`. Resolves once it has exited; at once if it already has.
 */
import type { ChildProcess } from 'node:child_process';

export async function stopChild(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

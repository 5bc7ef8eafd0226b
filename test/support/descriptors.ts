/** This process's open descriptors, read from /proc: which point at a file, and which bypass the page cache. */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

const O_DIRECT = 0o40000;

/** Descriptors whose target (a path) `matches`. */
export function descriptorsOf(matches: (target: string) => boolean): string[] {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return matches(readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      return false; // the descriptor readdir itself used, closed since
    }
  });
}

/** Whether descriptor `fd` was opened with O_DIRECT. */
export function isDirect(fd: string): boolean {
  const flags = /flags:\s+(\d+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1]!;
  return (Number.parseInt(flags, 8) & O_DIRECT) !== 0;
}

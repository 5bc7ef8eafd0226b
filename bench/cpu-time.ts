/**
 * CPU seconds spent by a process tree, from /proc (Linux): the bench reports, beside each method's
 * wall time, where the CPU went — PostgreSQL's backends, the client (our worker, or the baseline's
 * psql / pg_dump / pgcopydb / DuckDB), Temporal. On a machine with fewer cores than busy processes
 * the wall time follows the sum, so these columns say why a ratio is what it is.
 *
 * A tree's CPU is, over its live processes, their own user + system time plus what they collected
 * from children that exited (cutime + cstime): a backend that ended during a run is counted through
 * the postmaster that reaped it, a psql through the bench that waited for it.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** What the bench reads of /proc/PID/stat. */
export interface ProcStat {
  ppid: number;
  /** Its own utime + stime, in seconds. */
  own: number;
  /** What it collected from children that exited and it waited for (cutime + cstime), in seconds. */
  reaped: number;
}

/** `pid`'s stat (`self`: this process), or null once it has exited. */
export function readProcStat(pid: number | 'self'): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces: fields are counted after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]) / TICKS_PER_SECOND);
    return { ppid: Number(fields[1]), own: utime! + stime!, reaped: cutime! + cstime! };
  } catch {
    return null; // exited between the listing and the read
  }
}

/** CPU seconds of `root` and every live descendant, including children they reaped. */
export function treeCpuSeconds(root: number): number {
  const stats = new Map<number, ProcStat>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readProcStat(Number(name));
    if (stat) stats.set(Number(name), stat);
  }
  const inTree = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = stats.get(p)?.ppid ?? 0, hops++) if (p === root) return true;
    return false;
  };
  let seconds = 0;
  for (const [pid, stat] of stats) if (inTree(pid)) seconds += stat.own + stat.reaped;
  return seconds;
}

/** CPU seconds of the children this process has waited for (a baseline's psql, pg_dump, …). */
export function reapedChildrenCpuSeconds(): number {
  return readProcStat('self')!.reaped;
}

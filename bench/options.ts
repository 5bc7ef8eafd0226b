/**
 * The bench's command line. A bench run starts three servers and seeds millions of rows before it
 * times anything, so an option it does not know (`--row 100`), a missing value, a count that is not a
 * positive integer or an `--only` that does not compile stops it at once with the usage, instead of
 * being ignored (until 2026-12-05 `--help` itself started a whole run).
 */
import { parseArgs } from 'node:util';

export const BENCH_USAGE = `usage: npm run bench -- [--rows N] [--runs N] [--quick] [--scaling] [--tables N] [--only REGEXP]
  --rows N       rows of the bench table, and of the many-table schema in all (default 5000000)
  --quick        200000 rows, unless --rows says otherwise
  --runs N       runs of every method, interleaved; at least 3 (default 3)
  --scaling      also time 2 partitions on 1 M and 10 M rows, and planning at both sizes
  --tables N     tables in the many-table schema (default 200)
  --only REGEXP  run only the methods whose names match (results go to bench/results/latest-only.json)
  --help         print this`;

export interface BenchOptions {
  rows: number;
  runs: number;
  scaling: boolean;
  tables: number;
  only: RegExp | null;
  help: boolean;
}

/** Thrown for a command line the bench cannot run; its message ends with the usage. */
export class BenchUsageError extends Error {
  constructor(problem: string) {
    super(`${problem}\n${BENCH_USAGE}`);
    this.name = 'BenchUsageError';
  }
}

function positiveInteger(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1) throw new BenchUsageError(`--${name} must be a positive integer, not '${text}'`);
  return value;
}

/** Parses `argv` (the arguments after the script). */
export function benchOptions(argv: string[]): BenchOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        rows: { type: 'string' },
        runs: { type: 'string' },
        quick: { type: 'boolean', default: false },
        scaling: { type: 'boolean', default: false },
        tables: { type: 'string' },
        only: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    throw new BenchUsageError((err as Error).message);
  }
  let only: RegExp | null = null;
  if (values.only !== undefined) {
    try {
      only = new RegExp(values.only);
    } catch (err) {
      throw new BenchUsageError(`--only: ${(err as Error).message}`);
    }
  }
  return {
    rows: positiveInteger('rows', values.rows, values.quick ? 200_000 : 5_000_000),
    runs: Math.max(3, positiveInteger('runs', values.runs, 3)),
    scaling: values.scaling,
    tables: positiveInteger('tables', values.tables, 200),
    only,
    help: values.help,
  };
}

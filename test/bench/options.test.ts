/**
 * The bench's command line: a run it cannot do stops before any server starts, with the usage;
 * what it can do keeps its defaults.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { BENCH_USAGE, BenchUsageError, benchOptions } from '../../bench/options';

describe('bench options', () => {
  it('defaults: 5 M rows, 3 runs, 200 tables, every method', () => {
    assert.deepEqual(benchOptions([]), { rows: 5_000_000, runs: 3, scaling: false, tables: 200, only: null, help: false });
  });

  it('--quick is 200 000 rows unless --rows says otherwise; --runs is at least 3', () => {
    assert.equal(benchOptions(['--quick']).rows, 200_000);
    assert.equal(benchOptions(['--quick', '--rows', '1000']).rows, 1000);
    assert.equal(benchOptions(['--runs', '1']).runs, 3);
    assert.equal(benchOptions(['--runs', '5']).runs, 5);
    assert.equal(benchOptions(['--only', '^pg-extract 2', '--scaling']).only?.source, '^pg-extract 2');
  });

  const refused: [string, string[], RegExp][] = [
    ['an unknown option', ['--row', '100'], /Unknown option '--row'/],
    ['a missing value', ['--rows'], /argument missing/],
    ['a count that is not a number', ['--rows', '5e6'], /--rows must be a positive integer, not '5e6'/],
    ['a count of zero', ['--tables', '0'], /--tables must be a positive integer/],
    ['a regular expression that does not compile', ['--only', '('], /--only: Invalid regular expression/],
    ['a positional argument', ['quick'], /Unexpected argument 'quick'/],
  ];
  for (const [what, argv, message] of refused) {
    it(`refuses ${what}, with the usage`, () => {
      assert.throws(
        () => benchOptions(argv),
        (err: unknown) => err instanceof BenchUsageError && message.test(err.message) && err.message.endsWith(BENCH_USAGE),
      );
    });
  }

  it('`bench --help` prints the usage and exits 0, and a refused command line exits 2, before starting anything', () => {
    const bench = join(__dirname, '..', '..', 'bench', 'run.js');
    const help = spawnSync(process.execPath, [bench, '--help'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(help.status, 0);
    assert.equal(help.stdout.trim(), BENCH_USAGE);
    const wrong = spawnSync(process.execPath, [bench, '--rows', 'many'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(wrong.status, 2);
    // Exactly the problem and the usage (loading the bench may add Node's own warnings, which start with '('):
    // nothing was started or seeded.
    const said = wrong.stderr
      .split('\n')
      .filter((l) => l && !l.startsWith('(') && !/AWS SDK|node >=22|a\.co\/|upgrade|continue receiving/i.test(l))
      .join('\n');
    assert.equal(said, `--rows must be a positive integer, not 'many'\n${BENCH_USAGE}`);
  });
});

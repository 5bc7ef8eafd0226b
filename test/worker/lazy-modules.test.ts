/**
 * A worker carries DuckDB (about 18 MB) and the MySQL driver only once a run needs them: loading
 * the worker's modules must not load either.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

describe('worker modules', () => {
  it('loading the worker loads neither DuckDB nor mysql2 (they load on a Parquet run or a MySQL source)', () => {
    // A fresh process: this test process may have loaded them for other tests.
    const worker = join(__dirname, '..', '..', 'src', 'worker', 'worker.js');
    const loaded = execFileSync(process.execPath, ['-e', `require(${JSON.stringify(worker)}); console.log(JSON.stringify(Object.keys(require.cache)))`], {
      encoding: 'utf8',
    });
    const heavy = (JSON.parse(loaded) as string[]).filter((path) => /node_modules[\\/](@duckdb|mysql2)[\\/]/.test(path));
    assert.deepEqual(heavy, []);
  });
});

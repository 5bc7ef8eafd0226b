/**
 * A worker carries DuckDB (about 18 MB), the MySQL driver and the AWS SDK (about 20 MB) only once a
 * run needs them: loading the worker's modules must load none of them.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

describe('worker modules', () => {
  it('loading the worker loads neither DuckDB, mysql2 nor the AWS SDK (they load on a Parquet run, a MySQL source or an s3:// output)', () => {
    // A fresh process: this test process may have loaded them for other tests.
    const worker = join(__dirname, '..', '..', 'src', 'worker', 'worker.js');
    const loaded = execFileSync(process.execPath, ['-e', `require(${JSON.stringify(worker)}); console.log(JSON.stringify(Object.keys(require.cache)))`], {
      encoding: 'utf8',
    });
    const heavy = (JSON.parse(loaded) as string[]).filter((path) => /node_modules[\\/](@duckdb|mysql2|@aws-sdk)[\\/]/.test(path));
    assert.deepEqual(heavy, []);
  });
});

/**
 * The AWS SDK is loaded only when something names an s3:// output: a worker that writes local files
 * never loads it. Checked in a fresh node process, whose module cache shows what was required.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs in the child: the worker's modules, a local file written and committed, then one S3 call to an endpoint that refuses. */
const PROBE = `
const { join, sep } = require('node:path');
const { finished } = require('node:stream/promises');
const [root, dist] = process.argv.slice(1);
const awsLoaded = () => Object.keys(require.cache).some((k) => k.includes(sep + '@aws-sdk' + sep));
(async () => {
  require(join(dist, 'worker', 'worker.js'));
  const { OutputStores } = require(join(dist, 'storage', 'output-stores.js'));
  const stores = new OutputStores({ outputRoot: root, fileMode: 0o600 });
  const atStart = awsLoaded();
  await stores.of('run').prepareFolder('run', 'owner');
  const sink = await stores.of('run/a.csv').sink('run/a.csv');
  const writable = sink.open();
  writable.end('1,a\\n');
  await finished(writable);
  await sink.commit({ bytes: 4, sha256: require('node:crypto').createHash('sha256').update('1,a\\n').digest('hex') });
  const evidence = stores.of('s3://bucket/run/a.csv').evidenceName('s3://bucket/run/a.csv');
  const afterLocal = awsLoaded();
  const s3Error = await stores.of('s3://bucket/run').prepareFolder('s3://bucket/run', 'owner').then(() => null, (e) => e.code);
  console.log(JSON.stringify({ atStart, afterLocal, evidence, s3Error, afterS3: awsLoaded() }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

describe('LazyS3Store', () => {
  let root: string;
  beforeEach(() => (root = mkdtempSync(join(tmpdir(), 'pg-extract-lazy-s3-'))));
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('a worker loads the AWS SDK only at its first s3:// output, and S3 errors keep their codes', () => {
    const child = spawnSync(process.execPath, ['-e', PROBE, root, join(__dirname, '..', '..', 'src')], {
      encoding: 'utf8',
      // Port 9 (discard) refuses: the S3 call fails fast, after the SDK has been loaded.
      env: { ...process.env, AWS_ENDPOINT_URL: 'http://127.0.0.1:9', AWS_ACCESS_KEY_ID: 'probe', AWS_SECRET_ACCESS_KEY: 'probe' },
    });
    assert.equal(child.status, 0, child.stderr);
    const seen = JSON.parse(child.stdout.trim().split('\n').at(-1)!);
    assert.deepEqual(seen, { atStart: false, afterLocal: false, evidence: 's3://bucket/run/a.csv', s3Error: 'S3_UNREACHABLE', afterS3: true });
    assert.equal(readFileSync(join(root, 'run', 'a.csv'), 'utf8'), '1,a\n', 'the local file was written without the SDK');
  });
});

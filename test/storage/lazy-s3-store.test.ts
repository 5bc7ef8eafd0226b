/**
 * The AWS SDK is loaded only when something uses an s3:// output: local files are written and
 * committed without it, and the first S3 call loads it and keeps S3's error codes. Checked in a
 * fresh node process, whose module cache shows what was required (that the worker's modules alone
 * do not load it is test/worker/lazy-modules.test.ts).
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
  await stores.of('run').prepareFolder('run', 'owner');
  const sink = await stores.of('run/a.csv').sink('run/a.csv');
  const writable = sink.open();
  writable.end('1,a\\n');
  await finished(writable);
  await sink.commit({ bytes: 4, sha256: require('node:crypto').createHash('sha256').update('1,a\\n').digest('hex') });
  const evidence = stores.of('s3://bucket/run/a.csv').evidenceName('s3://bucket/run/a.csv');
  const afterLocal = awsLoaded();
  const s3Error = await stores.of('s3://bucket/run').prepareFolder('s3://bucket/run', 'owner').then(() => null, (e) => e.code);
  console.log(JSON.stringify({ afterLocal, evidence, s3Error, afterS3: awsLoaded() }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

const REFUSING = 'http://127.0.0.1:1';

describe('LazyS3Store', () => {
  let root: string;
  beforeEach(() => (root = mkdtempSync(join(tmpdir(), 'pg-extract-lazy-s3-'))));
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('local files need no AWS SDK; the first s3:// call loads it, and its failure keeps its S3 code', () => {
    const child = spawnSync(process.execPath, ['-e', PROBE, root, join(__dirname, '..', '..', 'src')], {
      encoding: 'utf8',
      timeout: 60_000,
      // Nothing listens on port 1: the S3 call fails fast, after the SDK has been loaded. Both endpoint variables, as the client prefers the S3 one.
      env: { ...process.env, AWS_ENDPOINT_URL_S3: REFUSING, AWS_ENDPOINT_URL: REFUSING, AWS_ACCESS_KEY_ID: 'probe', AWS_SECRET_ACCESS_KEY: 'probe' },
    });
    assert.equal(child.status, 0, child.stderr);
    const seen = JSON.parse(child.stdout.trim().split('\n').at(-1)!);
    assert.deepEqual(seen, { afterLocal: false, evidence: 's3://bucket/run/a.csv', s3Error: 'S3_UNREACHABLE', afterS3: true });
    assert.equal(readFileSync(join(root, 'run', 'a.csv'), 'utf8'), '1,a\n', 'the local file was written without the SDK');
  });
});

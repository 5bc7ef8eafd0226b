/**
 * A worker without a pre-built bundle bundles its workflows in a child process, so webpack never
 * runs in the worker; the file goes to one of the worker's scratch folders. `pg-extract
 * bundle-workflows` writes the same bundle ahead of time (test/support/services.ts makes the live
 * tests' bundle with it).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { projectRoot } from '../../devenv/project-root';
import { scratchPrefix } from '../../src/parquet/scratch';
import { cli } from '../support/cli';

const src = join(__dirname, '..', '..', 'src');

/**
 * What a bundle is: our workflows, with the inline source map the Temporal worker requires, and no
 * zod (every workflow execution evaluates the bundle's modules afresh: see src/contract/commit-report.ts).
 */
function assertIsOurBundle(code: string): void {
  for (const name of ['extractionWorkflow', 'copyBatchWorkflow']) assert.ok(code.includes(name), `the bundle has ${name}`);
  assert.ok(/\/\/# sourceMappingURL=data:application\/json;[^,]*base64,/.test(code), 'the bundle has its source map inline');
  assert.ok(!code.includes('node_modules/zod/'), 'no zod in the workflow bundle: a schema module was imported into workflow code');
}

describe('workflow bundle', function () {
  this.timeout(60_000);

  it('withWorkflowBundleFile bundles in a child process: webpack never runs in the caller, and the file is gone afterwards', () => {
    // A fresh process: this test process may have loaded webpack for other tests.
    const script = `const { withWorkflowBundleFile } = require(${JSON.stringify(join(src, 'worker', 'workflow-bundle.js'))});
      const fs = require('fs');
      let path;
      withWorkflowBundleFile(async (p) => { path = p; return fs.readFileSync(p, 'utf8'); }).then((code) => console.log(JSON.stringify({
        code,
        path,
        pid: process.pid,
        removed: !fs.existsSync(path),
        webpack: Object.keys(require.cache).filter((m) => /node_modules[\\\\/]webpack[\\\\/]lib[\\\\/]/.test(m)).length,
      })));`;
    const seen = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 50_000 })) as {
      code: string;
      path: string;
      pid: number;
      removed: boolean;
      webpack: number;
    };
    assertIsOurBundle(seen.code);
    assert.equal(seen.removed, true, 'the temporary bundle file is removed');
    // In a scratch folder of that process, which the next worker's sweep removes should the process be killed meanwhile.
    assert.equal(dirname(dirname(seen.path)), tmpdir());
    assert.ok(basename(dirname(seen.path)).startsWith(scratchPrefix(seen.pid)), `${seen.path} is in a scratch folder of pid ${seen.pid}`);
    assert.equal(seen.webpack, 0, 'no webpack module is loaded in the calling process');
  });

  for (const [failure, setup, use, expected] of [
    [
      'the child fails',
      "process.env.NODE_OPTIONS = '--no-such-flag';",
      'async () => { throw new Error("use was called"); }',
      /bundling the workflows in a child process failed \(exit 9\): .*--no-such-flag/,
    ],
    ['the caller fails with the bundle', '', 'async () => { throw new Error("the caller failed"); }', /^the caller failed$/],
  ] as const) {
    it(`withWorkflowBundleFile when ${failure}: the error is that failure's, and no scratch folder is left`, () => {
      const script = `${setup}
        const { withWorkflowBundleFile } = require(${JSON.stringify(join(src, 'worker', 'workflow-bundle.js'))});
        withWorkflowBundleFile(${use}).catch((err) => console.log(JSON.stringify({ message: err.message, pid: process.pid })));`;
      const seen = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 50_000 })) as { message: string; pid: number };
      assert.match(seen.message, expected);
      assert.deepEqual(
        readdirSync(tmpdir()).filter((name) => name.startsWith(scratchPrefix(seen.pid))),
        [],
      );
    });
  }

  it('`pg-extract bundle-workflows --out FILE` writes the bundle', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pg-extract-bundle-test-'));
    try {
      const out = join(dir, 'bundle.js');
      const said = await cli(['bundle-workflows', '--out', out]);
      assert.equal(said.code, 0, said.stderr);
      assert.equal(said.stdout.trim(), `wrote ${out}`);
      assertIsOurBundle(readFileSync(out, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the Docker image's build copies every folder tsconfig.json compiles (a missing one failed the image's build)", () => {
    const dockerfile = readFileSync(join(projectRoot(), 'Dockerfile'), 'utf8');
    const copied = new Set([...dockerfile.matchAll(/^COPY (\S+) \.\/\S+$/gm)].map((m) => m[1]));
    const compiled = (JSON.parse(readFileSync(join(projectRoot(), 'tsconfig.json'), 'utf8')) as { include: string[] }).include.map(
      (glob) => glob.split('/')[0],
    );
    assert.deepEqual(
      compiled.filter((folder) => !copied.has(folder)),
      [],
      'folders compiled but not copied',
    );
  });

  it('the Docker image starts its worker with the bundle its build wrote (no bundling at each start)', () => {
    const dockerfile = readFileSync(join(projectRoot(), 'Dockerfile'), 'utf8');
    const written = /bundle-workflows --out (\S+)/.exec(dockerfile)?.[1];
    assert.ok(written, 'the build runs bundle-workflows');
    assert.match(dockerfile, new RegExp(`^COPY --from=build /app/${written} `, 'm'), 'the image gets the bundle');
    assert.match(dockerfile, new RegExp(`^ENV PG_EXTRACT_WORKFLOW_BUNDLE=/app/${written}$`, 'm'), 'the worker is pointed at it');
  });
});

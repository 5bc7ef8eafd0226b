/**
 * The workflow bundle a worker runs. Bundling is webpack's work: about 2 s and over 200 MB at its
 * peak, and a worker that ran webpack itself stayed about 30 MB larger for good (its modules stay
 * loaded). So a worker without a pre-built bundle bundles in a child process and reads the result,
 * and `pg-extract bundle-workflows --out FILE` writes a bundle ahead of time (the Docker image does)
 * for PG_EXTRACT_WORKFLOW_BUNDLE. Run as a script, this file writes the bundle to the path it is given.
 */
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeScratch } from '../parquet/scratch';

/** The payload converter the bundle and the worker both use (./payload-converter.ts). */
export const PAYLOAD_CONVERTER_PATH = require.resolve('./payload-converter');

/** Bundles ./workflows in this process and writes the code to `path`. */
export async function writeWorkflowBundle(path: string): Promise<void> {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const quiet = () => undefined;
  // Temporal's bundler logs webpack's whole report, warnings included, at INFO: dropped. A failed build is an error,
  // on stderr, which the parent shows in its own error.
  const logger = { trace: quiet, debug: quiet, info: quiet, log: quiet, warn: console.error, error: console.error };
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    payloadConverterPath: PAYLOAD_CONVERTER_PATH,
    logger: logger as never,
  });
  await writeFile(path, code);
}

/**
 * Bundles ./workflows in a child process (this file run as a script) into a temporary file and calls `use` with its
 * path; the file is removed once `use` settles. A bundle given by path is read once and used as it is, where one
 * given as code is kept and copied (its source map rewritten) by the Temporal worker. The file's folder is one of
 * this process's scratch folders, so if the worker is killed meanwhile the next worker on the host removes it.
 */
export async function withWorkflowBundleFile<T>(use: (codePath: string) => Promise<T>): Promise<T> {
  const dir = await makeScratch();
  try {
    const codePath = join(dir, 'workflow-bundle.js');
    await new Promise<void>((resolve, reject) =>
      // A hung child would hang the worker's start with nothing in its log; bundling takes about 2 s.
      execFile(process.execPath, [__filename, codePath], { encoding: 'utf8', maxBuffer: 16 << 20, timeout: 120_000 }, (err, _stdout, stderr) =>
        err
          ? reject(
              new Error(`bundling the workflows in a child process failed (${err.signal ?? `exit ${err.code}`}): ${stderr.trim() || err.message}`, {
                cause: err,
              }),
            )
          : resolve(),
      ),
    );
    return await use(codePath);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  writeWorkflowBundle(process.argv[2]!).catch((err: unknown) => {
    console.error((err as Error)?.stack ?? err);
    process.exit(1);
  });
}

/**
 * The cleanup activity applies a terminal outcome to files: each deleted at most once (ENOENT
 * counts as done, so a retried cleanup is harmless), failures reported as stable codes, partial
 * temp files swept, and empty output folders removed.
 */
import { readdir, rmdir, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { FileReleaseAuthority } from '../lifecycle/file-release';
import type { ReleaseReport } from '../lifecycle/terminal';
import { confinedPath } from '../output-root';
import { withFailures } from './failures';
import { type ReleaseOutputsRequest, parseReleaseRequest } from './requests';

/** The temp name copyToFile writes before its atomic rename. */
const TEMP_FILE = /\.tmp-\d+-[0-9a-f]{8}$/;

export function createCleanupActivities({ outputRoot }: { outputRoot: string }) {
  return {
    async releaseOutputs(raw: ReleaseOutputsRequest): Promise<ReleaseReport> {
      return withFailures(async () => {
        const req = parseReleaseRequest(raw);
        const paths = req.paths.map((p) => confinedPath(outputRoot, p));
        const report = await new FileReleaseAuthority().releaseAll(paths);
        for (const folder of req.folders.map((f) => confinedPath(outputRoot, f))) {
          await sweepTemps(folder);
          await removeIfEmpty(folder, outputRoot);
        }
        return report;
      });
    },
  };
}

async function sweepTemps(folder: string): Promise<void> {
  const entries = await readdir(folder).catch(() => [] as string[]);
  await Promise.all(entries.filter((e) => TEMP_FILE.test(e)).map((e) => unlink(join(folder, e)).catch(() => undefined)));
}

/** Removes `folder` and then its parents up to (not including) `root`, while they are empty. */
async function removeIfEmpty(folder: string, root: string): Promise<void> {
  for (let dir = folder; dir.startsWith(root) && dir !== root; dir = dirname(dir)) {
    try {
      await rmdir(dir);
    } catch {
      return;
    }
  }
}

/**
 * Output folders and files: create an attempt's folder, and apply a terminal outcome or discard
 * an attempt. Files are deleted at most once each (ENOENT counts as done, so a retried cleanup is
 * harmless) with failures reported as stable codes. A folder is discarded by renaming it away
 * first: a writer still running can then neither finish its rename into it nor re-create it.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rename, rm, rmdir, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { FileReleaseAuthority } from '../lifecycle/file-release';
import type { ReleaseReport } from '../lifecycle/terminal';
import { confinedPath, prepareOutputFolder } from '../output-root';
import { withFailures } from './failures';
import { type ReleaseOutputsRequest, parseReleaseRequest } from './requests';

/** The temp name copyToFile writes before its atomic rename. */
const TEMP_FILE = /\.tmp-\d+-[0-9a-f]{8}$/;

export function createCleanupActivities({ outputRoot }: { outputRoot: string }) {
  return {
    async prepareOutputFolder(name: string): Promise<string> {
      return withFailures(() => prepareOutputFolder(outputRoot, name));
    },

    async releaseOutputs(raw: ReleaseOutputsRequest): Promise<ReleaseReport> {
      return withFailures(async () => {
        const req = parseReleaseRequest(raw);
        const report = await new FileReleaseAuthority().releaseAll(req.paths.map((p) => confinedPath(outputRoot, p)));
        // A file that could not be deleted stays where the receipt says it is: its folder is only swept.
        const discard = report.failures.length === 0 ? req.discardFolders : [];
        const sweep = report.failures.length === 0 ? req.sweepFolders : [...req.sweepFolders, ...req.discardFolders];
        for (const folder of sweep.map((f) => confinedPath(outputRoot, f))) await sweepTemps(folder);
        for (const folder of discard.map((f) => confinedPath(outputRoot, f))) await discardFolder(folder, outputRoot);
        return report;
      });
    },
  };
}

async function sweepTemps(folder: string): Promise<void> {
  const entries = await readdir(folder).catch(() => [] as string[]);
  await Promise.all(entries.filter((e) => TEMP_FILE.test(e)).map((e) => unlink(join(folder, e)).catch(() => undefined)));
}

/** Renames `folder` away, removes it with whatever a late writer left, then empty parents up to `root`. */
async function discardFolder(folder: string, root: string): Promise<void> {
  const graveyard = join(dirname(folder), `.${basename(folder)}.discarded-${randomBytes(4).toString('hex')}`);
  try {
    await rename(folder, graveyard);
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
  }
  await rm(graveyard, { recursive: true, force: true });
  for (let dir = dirname(folder); dir.startsWith(root) && dir !== root; dir = dirname(dir)) {
    try {
      await rmdir(dir);
    } catch {
      return;
    }
  }
}

/**
 * Output folders and files: create an attempt's folder, and apply a terminal outcome or discard
 * an attempt. A run touches only folders that carry its own marker and whose real path (symlinks
 * followed) is inside the output root; it deletes the files it was asked to, the temp files of its
 * writers and its marker, then removes folders only when empty. Files are deleted at most once
 * each, and every failure is reported as a stable code, never thrown over the caller's outcome.
 * A folder is discarded by renaming it away first: a writer still running can then neither
 * finish its rename into it nor re-create it.
 */
import { Context } from '@temporalio/activity';
import { randomBytes } from 'node:crypto';
import { readdir, rename, rmdir, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ErrorCode, PgExtractError } from '../errors';
import { FileReleaseAuthority, releaseErrorCode } from '../lifecycle/file-release';
import type { ReleaseReport } from '../lifecycle/terminal';
import { OWNER_MARKER, folderOwner } from '../output-owner';
import { DEFAULT_FILE_MODE, assertRealInside, confinedPath, prepareOutputFolder } from '../output-root';
import { withFailures } from './failures';
import { type ReleaseOutputsRequest, parseReleaseRequest } from './requests';

/** The temp name copyToFile writes before its atomic rename. */
const TEMP_FILE = /\.tmp-\d+-[0-9a-f]{8}$/;

/** The run this activity works for, as its folders' markers name it. */
function runOwner(): string {
  const execution = Context.current().info.workflowExecution;
  if (!execution) throw new PgExtractError(ErrorCode.INPUT_INVALID, 'output folders belong to workflow runs; this activity has none');
  return JSON.stringify({ workflowId: execution.workflowId, runId: execution.runId });
}

export function createCleanupActivities({ outputRoot, fileMode = DEFAULT_FILE_MODE }: { outputRoot: string; fileMode?: number }) {
  return {
    async prepareOutputFolder(name: string): Promise<string> {
      return withFailures(() => prepareOutputFolder(outputRoot, name, { owner: runOwner(), fileMode }));
    },

    async releaseOutputs(raw: ReleaseOutputsRequest): Promise<ReleaseReport> {
      return withFailures(async () => {
        const req = parseReleaseRequest(raw);
        const folders = new RunFolders(outputRoot, runOwner());
        const report = await new FileReleaseAuthority((path) => folders.removeFile(path)).releaseAll(req.paths.map((p) => confinedPath(outputRoot, p)));
        // A file that could not be deleted stays where the receipt says it is: its folder is only swept.
        const discard = report.failures.length === 0 ? req.discardFolders : [];
        const sweep = report.failures.length === 0 ? req.sweepFolders : [...req.sweepFolders, ...req.discardFolders];
        for (const folder of sweep.map((f) => confinedPath(outputRoot, f))) await folders.sweepTemps(folder);
        for (const folder of discard.map((f) => confinedPath(outputRoot, f))) {
          const code = await folders.discard(folder);
          if (code) report.failures.push({ path: folder, code });
        }
        return report;
      });
    },
  };
}

/** One release's view of the run's folders: their real location and owner, looked up once each. */
class RunFolders {
  readonly #owners = new Map<string, Promise<'mine' | 'absent'>>();

  constructor(
    private readonly root: string,
    private readonly owner: string,
  ) {}

  /** Deletes `path` if it is this run's; resolves when it is gone, rejects with a coded error otherwise. */
  async removeFile(path: string): Promise<void> {
    await assertRealInside(this.root, path, path);
    const owned = await this.#ownerOf(dirname(path));
    try {
      await unlink(path);
    } catch (err) {
      // Gone from a folder the run can see as its own: proved gone. Anywhere else: not visible.
      if ((err as { code?: string }).code !== 'ENOENT' || owned !== 'mine') throw err;
    }
  }

  /** Deletes the temp files of this run's writers in `folder`; retained files stay. Best effort. */
  async sweepTemps(folder: string): Promise<void> {
    try {
      if ((await this.#ownedInside(folder)) === 'mine') await removeTemps(folder);
    } catch {
      // Temp files are not evidence: one left behind costs space, not truth.
    }
  }

  /** Removes this run's `folder` (its temp files, its marker, then the folder if empty); returns a code if it could not. */
  async discard(folder: string): Promise<string | null> {
    try {
      // A folder without this run's marker was never prepared here, or is not visible here: its files' releases say which.
      if ((await this.#ownedInside(folder)) !== 'mine') return null;
      const graveyard = join(dirname(folder), `.${basename(folder)}.discarded-${randomBytes(4).toString('hex')}`);
      await rename(folder, graveyard);
      await removeTemps(graveyard);
      await unlink(join(graveyard, OWNER_MARKER));
      await rmdir(graveyard);
    } catch (err) {
      return releaseErrorCode(err);
    }
    await removeEmptyParents(folder, this.root);
    return null;
  }

  async #ownedInside(folder: string): Promise<'mine' | 'absent'> {
    await assertRealInside(this.root, folder, folder);
    return this.#ownerOf(folder);
  }

  /** 'mine' when `folder` carries this run's marker, 'absent' when it carries none; another run's is refused. */
  #ownerOf(folder: string): Promise<'mine' | 'absent'> {
    let pending = this.#owners.get(folder);
    if (!pending) {
      pending = folderOwner(folder).then((owner) => {
        if (owner === null) return 'absent';
        if (owner === this.owner) return 'mine';
        throw new PgExtractError(ErrorCode.OUTPUT_FOLDER_OWNED, 'the output folder belongs to another run');
      });
      this.#owners.set(folder, pending);
    }
    return pending;
  }
}

async function removeTemps(folder: string): Promise<void> {
  const temps = (await readdir(folder)).filter((e) => TEMP_FILE.test(e));
  await Promise.all(temps.map((e) => unlink(join(folder, e)).catch((err: { code?: string }) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)))));
}

/** Removes the now-empty folders above `folder`, up to the root; a folder still in use stays. */
async function removeEmptyParents(folder: string, root: string): Promise<void> {
  for (let dir = dirname(folder); dir.startsWith(root) && dir !== root; dir = dirname(dir)) {
    try {
      await rmdir(dir);
    } catch {
      return;
    }
  }
}

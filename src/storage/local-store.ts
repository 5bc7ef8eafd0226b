/**
 * Outputs in a local folder under the worker's output root. A run touches only folders that carry
 * its own marker and whose real path (symlinks followed) is inside the root; it deletes the files
 * it was asked to, the temp files of its writers and its marker, then removes folders only when
 * empty. Files are deleted at most once each, and every failure is a stable code in the report.
 * A folder is discarded by renaming it away first: a writer still running can then neither finish
 * its rename into it nor re-create it.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, rename, rmdir, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import { ErrorCode, PgExtractError } from '../errors';
import { FileReleaseAuthority, releaseErrorCode } from './file-release';
import { ignoreError } from './ignore-error';
import type { ReleaseReport } from '../lifecycle/terminal';
import { OWNER_MARKER, folderOwner } from './output-owner';
import { assertRealInside, checkOutputFile, confinedPath, prepareOutputFolder, realRootOnce } from './output-root';
import { LocalFileSink, TEMP_FILE, fsyncDirectory } from './local-file-sink';
import type { OutputSink } from './output-sink';
import type { OutputStore, ReleaseRequest, SinkBatch, SinkOptions, VisibleOutput } from './output-store';

export class LocalStore implements OutputStore {
  /** @param directIo whether files are written with O_DIRECT where the file system allows it (./durable-file-sink.ts). */
  constructor(
    private readonly root: string,
    private readonly fileMode: number,
    private readonly directIo = true,
  ) {}

  async prepareFolder(folder: string, owner: string): Promise<void> {
    await prepareOutputFolder(this.root, folder, { owner, fileMode: this.fileMode });
  }

  async sink(name: string, options: SinkOptions = {}): Promise<OutputSink> {
    const path = await checkOutputFile(this.root, name);
    await preparedHere(name, dirname(path));
    return new LocalFileSink(path, this.fileMode, { directIo: this.directIoFor(options) });
  }

  /**
   * The folder of each name is checked through symlinks once: a file's own name needs no such
   * check, since its temp file is created exclusively (never through a link) and the rename
   * replaces whatever entry has the name.
   */
  batch(): SinkBatch {
    const folders = new Map<string, Promise<void>>();
    return {
      sink: async (name, options = {}) => {
        const path = confinedPath(this.root, name);
        const folder = dirname(path);
        let checked = folders.get(folder);
        if (!checked) {
          checked = assertRealInside(this.root, folder, name).then(() => preparedHere(name, folder));
          folders.set(folder, checked);
        }
        await checked;
        return new LocalFileSink(path, this.fileMode, { syncFolder: false, directIo: this.directIoFor(options) });
      },
      sync: async () => {
        for (const folder of folders.keys()) await fsyncDirectory(folder);
      },
    };
  }

  async removeStartingWith(namePrefix: string): Promise<string[]> {
    const prefix = await checkOutputFile(this.root, namePrefix);
    const folder = dirname(prefix);
    // A folder missing here is not this worker's to clean: its sink() then says why.
    const entries = (await readdir(folder).catch(ignoreError('ENOENT'))) ?? [];
    const stale = entries.filter((e) => e.startsWith(basename(prefix))).map((e) => join(folder, e));
    await Promise.all(stale.map((path) => unlink(path).catch(ignoreError('ENOENT'))));
    // Temp files are a writer's leftovers, not outputs.
    return stale.filter((path) => !TEMP_FILE.test(path));
  }

  evidenceName(location: string): string {
    return relative(this.root, location);
  }

  async release(request: ReleaseRequest, owner: string): Promise<ReleaseReport> {
    const folders = new RunFolders(this.root, owner);
    const report = await new FileReleaseAuthority((path) => folders.removeFile(path)).releaseAll(request.paths.map((p) => confinedPath(this.root, p)));
    // A file that could not be deleted stays where the receipt says it is: its folder is only swept.
    const discard = report.failures.length === 0 ? request.discardFolders : [];
    const sweep = report.failures.length === 0 ? request.sweepFolders : [...request.sweepFolders, ...request.discardFolders];
    for (const folder of sweep.map((f) => confinedPath(this.root, f))) await folders.sweepTemps(folder);
    for (const folder of discard.map((f) => confinedPath(this.root, f))) {
      const code = await folders.discard(folder);
      if (code) report.failures.push({ path: folder, code });
    }
    return report;
  }

  /** A file the loader reads back at once is better found in the page cache. */
  private directIoFor(options: SinkOptions): boolean {
    return this.directIo && !options.readBack;
  }

  async read(location: string): Promise<Readable> {
    return createReadStream(await checkOutputFile(this.root, location));
  }

  async checkVisible(outputs: readonly VisibleOutput[]): Promise<void> {
    const rootReal = realRootOnce(this.root);
    await Promise.all(
      outputs.map(async ({ name, bytes }) => {
        const size = await stat(await checkOutputFile(this.root, name, rootReal)).then(
          (s) => s.size,
          () => null,
        );
        if (size !== bytes)
          throw notVisible(name, size === null ? 'it is not visible on the worker assembling the manifest' : `it is ${size} bytes there, not ${bytes}`);
      }),
    );
  }
}

/**
 * The workflow prepared the folder on some worker's disk; not finding it here means this worker
 * does not share that disk, and its file would be one no reader of the manifest sees.
 */
async function preparedHere(name: string, folder: string): Promise<void> {
  const isFolder = await stat(folder).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isFolder) throw notVisible(name, "its folder was not prepared on this worker's disk");
}

function notVisible(name: string, why: string): PgExtractError {
  return new PgExtractError(
    ErrorCode.OUTPUT_NOT_VISIBLE,
    `${name}: ${why}. Workers of one run must share the output folder (one host or a shared volume), or write to object storage (--out s3://bucket/prefix)`,
    { field: 'outDir' },
  );
}

/** One release's view of the run's folders: their real location and owner, looked up once each. */
class RunFolders {
  readonly #owners = new Map<string, Promise<'mine' | 'absent'>>();
  /** The graveyards of each folder a missing file was looked for in, read once per release. */
  readonly #graveyards = new Map<string, Promise<string[]>>();
  readonly #rootReal: () => Promise<string>;

  constructor(
    private readonly root: string,
    private readonly owner: string,
  ) {
    this.#rootReal = realRootOnce(root);
  }

  /** Deletes `path` if it is this run's; resolves when it is gone, rejects with a coded error otherwise. */
  async removeFile(path: string): Promise<void> {
    await assertRealInside(this.root, path, path, this.#rootReal);
    const owned = await this.#ownerOf(dirname(path));
    try {
      await unlink(path);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT') throw err;
      // Gone from a folder the run can see as its own: proved gone.
      if (owned === 'mine') return;
      // Its folder renamed away by a discard that stopped part-way: the file goes from there. Anywhere else: not visible.
      const folder = dirname(path);
      let found = this.#graveyards.get(folder);
      if (!found) this.#graveyards.set(folder, (found = this.#graveyardsOf(folder)));
      const graveyards = await found;
      if (graveyards.length === 0) throw err;
      await Promise.all(graveyards.map((graveyard) => unlink(join(graveyard, basename(path))).catch(ignoreError('ENOENT'))));
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

  /**
   * Removes this run's `folder` and every file in it, as a discarded S3 prefix keeps no object; returns a code if it
   * could not. The folder is renamed away first (a graveyard): a writer still running can then neither land a file
   * in it nor re-create it. A graveyard whose discard stopped part-way (its worker died) is finished here.
   */
  async discard(folder: string): Promise<string | null> {
    try {
      const graveyards = await this.#graveyardsOf(folder);
      // A folder without this run's marker was never prepared here, or is not visible here: its files' releases say which.
      if ((await this.#ownedInside(folder)) === 'mine') {
        const graveyard = `${graveyardPrefix(folder)}${randomBytes(4).toString('hex')}`;
        // Gone meanwhile: another release of the run renamed it away, and removes it.
        if (await rename(folder, graveyard).then(() => true, ignoreError('ENOENT'))) graveyards.push(graveyard);
      }
      for (const graveyard of graveyards) await removeGraveyard(graveyard, folder);
    } catch (err) {
      return releaseErrorCode(err);
    }
    await removeEmptyParents(folder, this.root);
    return null;
  }

  /** The graveyards of `folder` that carry this run's marker. */
  async #graveyardsOf(folder: string): Promise<string[]> {
    const parent = dirname(folder);
    await assertRealInside(this.root, parent, folder, this.#rootReal);
    const prefix = basename(graveyardPrefix(folder));
    const names = ((await readdir(parent).catch(ignoreError('ENOENT'))) ?? []).filter((e) => e.startsWith(prefix));
    const owners = await Promise.all(names.map((e) => folderOwner(join(parent, e))));
    return names.filter((_, i) => owners[i] === this.owner).map((e) => join(parent, e));
  }

  async #ownedInside(folder: string): Promise<'mine' | 'absent'> {
    await assertRealInside(this.root, folder, folder, this.#rootReal);
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

/** Where `folder` is renamed to be discarded, before its random suffix. */
function graveyardPrefix(folder: string): string {
  return join(dirname(folder), `.${basename(folder)}.discarded-`);
}

/**
 * Deletes every file of a graveyard, then its marker and itself. What cannot go (a folder inside it, a file that will
 * not unlink) goes back under the folder's name with its marker, where the receipt and a retried release find it.
 */
async function removeGraveyard(graveyard: string, folder: string): Promise<void> {
  try {
    const files = (await readdir(graveyard)).filter((e) => e !== OWNER_MARKER);
    await Promise.all(files.map((e) => unlink(join(graveyard, e)).catch(ignoreError('ENOENT'))));
    await unlink(join(graveyard, OWNER_MARKER));
    await rmdir(graveyard);
  } catch (err) {
    // Gone meanwhile (its marker, the graveyard): another release of the run is removing it, and must not find it
    // renamed back. Unless that one could not, and put it back itself: then this release has failed too.
    if ((err as { code?: string }).code === 'ENOENT') {
      if (
        await stat(folder).then(
          () => false,
          () => true,
        )
      )
        return;
      throw Object.assign(new Error(`${folder} is back: another release could not remove it`), { code: 'ENOTEMPTY' });
    }
    await rename(graveyard, folder).catch(() => undefined);
    throw err;
  }
}

async function removeTemps(folder: string): Promise<void> {
  const temps = (await readdir(folder)).filter((e) => TEMP_FILE.test(e));
  await Promise.all(temps.map((e) => unlink(join(folder, e)).catch(ignoreError('ENOENT'))));
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

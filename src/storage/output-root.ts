/**
 * Confines output paths to their root. A relative name is resolved under the root; `..`, an
 * absolute path elsewhere, or a symlink whose target leaves the root are all refused with
 * OUTPUT_PATH_ESCAPES_ROOT before anything is created. Folders are created owner-only (0700 by
 * default) whatever the umask, and claimed by the run that prepares them.
 */
import { chmod, mkdir, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { climbsOut } from '../contract/relative-path';
import { ErrorCode, PgExtractError } from '../errors';
import { claimFolder } from './output-owner';

/** Mode of output files unless the worker widens it (PG_EXTRACT_FILE_MODE): owner read/write only. */
export const DEFAULT_FILE_MODE = 0o600;

/** The folder mode that goes with a file mode: each class that may read files may also enter folders. */
function folderModeOf(fileMode: number): number {
  return fileMode | ((fileMode & 0o444) >> 2);
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!climbsOut(rel) && !isAbsolute(rel));
}

function escapes(name: string): PgExtractError {
  return new PgExtractError(ErrorCode.OUTPUT_PATH_ESCAPES_ROOT, `output path ${JSON.stringify(name.slice(0, 200))} leaves the output root`, {
    field: 'outDir',
  });
}

/** The absolute path of `name` under `root`, lexically checked (no file system access). */
export function confinedPath(root: string, name: string): string {
  if (name.includes('\0')) throw escapes(name);
  const path = resolve(root, name);
  if (!inside(resolve(root), path)) throw escapes(name);
  return path;
}

/** `path` with its deepest existing ancestor replaced by that ancestor's real path (symlinks followed). */
async function realPathOfAncestor(path: string): Promise<string> {
  for (let dir = path; ; dir = dirname(dir)) {
    try {
      return resolve(await realpath(dir), relative(dir, path));
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT' || dirname(dir) === dir) throw err;
    }
  }
}

/** The real path of `root` (symlinks followed), the folder made first if need be. */
async function realRoot(root: string): Promise<string> {
  await mkdir(root, { recursive: true });
  return realpath(root);
}

/** The real path of `root`, resolved on first call only: one operation over many paths asks for it once, not per path. */
export function realRootOnce(root: string): () => Promise<string> {
  let real: Promise<string> | undefined;
  return () => (real ??= realRoot(root));
}

/** Checks `path` (lexically inside `root`) through symlinks: its real location must be inside too. */
export async function assertRealInside(root: string, path: string, name: string, rootReal = () => realRoot(root)): Promise<void> {
  if (!inside(await rootReal(), await realPathOfAncestor(path))) throw escapes(name);
}

/**
 * Creates the folder `name` under `root` (checked lexically and through symlinks) for `owner`,
 * or refuses it with OUTPUT_FOLDER_OWNED when another run has claimed it. Returns its path.
 */
export async function prepareOutputFolder(root: string, name: string, { owner, fileMode }: { owner: string; fileMode: number }): Promise<string> {
  const path = confinedPath(root, name);
  await assertRealInside(root, path, name);
  const mode = folderModeOf(fileMode);
  const first = await mkdir(path, { recursive: true, mode });
  // A symlink could have appeared between the check and mkdir; check the created folder itself.
  await assertRealInside(root, path, name);
  // mkdir applies the umask: the folders it made get their mode at once, so a claim that fails or
  // is cut off leaves none wider (a retry finds them made, and would set only its own folder's).
  if (first) for (let dir = path; dir !== dirname(first); dir = dirname(dir)) await chmod(dir, mode);
  await claimFolder(path, owner);
  // A retried prepare finds its folder made; set its mode once it is known to be this run's.
  if (!first) await chmod(path, mode);
  return path;
}

/**
 * Checks the file `name` under `root` without creating anything: its folder must already exist
 * (the workflow creates it), so a writer that starts after its attempt was discarded fails
 * instead of re-creating the folder.
 */
export async function checkOutputFile(root: string, name: string, rootReal?: () => Promise<string>): Promise<string> {
  const path = confinedPath(root, name);
  await assertRealInside(root, path, name, rootReal);
  return path;
}

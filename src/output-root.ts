/**
 * Confines output paths to their root. A relative name is resolved under the root; `..`, an
 * absolute path elsewhere, or a symlink whose target leaves the root are all refused with
 * OUTPUT_PATH_ESCAPES_ROOT before anything is created.
 */
import { mkdir, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { ErrorCode, PgExtractError } from './errors';

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel) && !rel.startsWith(`..${sep}`));
}

function escapes(name: string): PgExtractError {
  return new PgExtractError(ErrorCode.OUTPUT_PATH_ESCAPES_ROOT, `output path ${JSON.stringify(name.slice(0, 200))} leaves the output root`, { field: 'outDir' });
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

/** Checks `name` lexically and through symlinks, then creates its parent folder. Returns the path. */
export async function prepareOutputFile(root: string, name: string): Promise<string> {
  const path = confinedPath(root, name);
  await mkdir(root, { recursive: true });
  const realRoot = await realpath(root);
  if (!inside(realRoot, await realPathOfAncestor(dirname(path)))) throw escapes(name);
  await mkdir(dirname(path), { recursive: true });
  // A symlink could have appeared between the check and mkdir; check the created folder itself.
  if (!inside(realRoot, await realpath(dirname(path)))) throw escapes(name);
  return path;
}

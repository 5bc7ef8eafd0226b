/**
 * Which run owns an output folder: a marker file the run creates exclusively when it prepares the
 * folder. A run writes only into, and deletes only from, folders carrying its own marker; a
 * marker that is absent where the run wrote means the release cannot see the run's files.
 */
import { link, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, PgExtractError } from '../errors';
import { ignoreError } from './ignore-error';
import { tempPathFor } from './local-file-sink';

/** The marker's name; a dot file, so it never looks like an output file. */
export const OWNER_MARKER = '.pg-extract-run';

/** The owner named by `folder`'s marker, or null when there is no marker (or no folder) to see. */
export async function folderOwner(folder: string): Promise<string | null> {
  try {
    return await readFile(join(folder, OWNER_MARKER), 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
}

/** What link() answers on a file system without hard links (vfat, exFAT, many FUSE and SMB mounts). */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * Marks `folder` as `owner`'s, or checks that it already is; another owner's folder is refused.
 * The marker is written whole and synced under a temp name, then linked into place: link() fails
 * when the marker exists, so the claim stays exclusive, and a marker is never seen empty. (Created
 * in place, one whose worker died, or whose host lost power, before its name was written was
 * empty, and every retry of the run refused the folder as another run's.) A temp name left by a
 * claim cut off is swept with the run's other temp files once the run's marker is there. Where
 * the file system has no hard links, the marker is created in place, as before.
 */
export async function claimFolder(folder: string, owner: string): Promise<void> {
  const marker = join(folder, OWNER_MARKER);
  const draft = tempPathFor(marker);
  await writeSynced(draft, owner);
  try {
    await link(draft, marker);
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (NO_HARD_LINKS.has(code)) await writeSynced(marker, owner).catch(ignoreError('EEXIST'));
    else if (code !== 'EEXIST') throw err;
  } finally {
    // Gone already if the run's discard swept it meanwhile.
    await unlink(draft).catch(ignoreError('ENOENT'));
  }
  if ((await folderOwner(folder)) !== owner) {
    throw new PgExtractError(ErrorCode.OUTPUT_FOLDER_OWNED, 'the output folder belongs to another run', { field: 'outDir' });
  }
}

/** Creates `path` (it must not exist), writes `text` and syncs it. */
async function writeSynced(path: string, text: string): Promise<void> {
  const handle = await open(path, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

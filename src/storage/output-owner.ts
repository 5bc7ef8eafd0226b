/**
 * Which run owns an output folder: a marker file the run creates exclusively when it prepares the
 * folder. A run writes only into, and deletes only from, folders carrying its own marker; a
 * marker that is absent where the run wrote means the release cannot see the run's files.
 */
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, PgExtractError } from '../errors';

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

/** Marks `folder` as `owner`'s, or checks that it already is; another owner's folder is refused. */
export async function claimFolder(folder: string, owner: string): Promise<void> {
  try {
    const handle = await open(join(folder, OWNER_MARKER), 'wx', 0o600);
    try {
      await handle.writeFile(owner);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (err) {
    if ((err as { code?: string }).code !== 'EEXIST') throw err;
  }
  if ((await folderOwner(folder)) !== owner) {
    throw new PgExtractError(ErrorCode.OUTPUT_FOLDER_OWNED, 'the output folder belongs to another run', { field: 'outDir' });
  }
}

/**
 * FileReleaseAuthority: deletes each physical file at most once, however many views of an
 * artifact ask. A missing file counts as already released; any other failure becomes a stable
 * errno-derived code, never an exception to the caller.
 */
import { unlink } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CleanupCode, type ReleaseReport } from './terminal';

/** Result of one file's release. */
export interface FileRelease {
  path: string;
  released: boolean;
  code: string | null;
}

const ERRNO_CODES = new Set(['EACCES', 'EPERM', 'EBUSY', 'EROFS', 'EISDIR', 'ENOTEMPTY', 'EIO', 'ENOTDIR', 'ELOOP']);

/** The stable code for a failed deletion. */
export function releaseErrorCode(err: unknown): string {
  const errno = (err as { code?: unknown } | null)?.code;
  return typeof errno === 'string' && ERRNO_CODES.has(errno) ? errno : CleanupCode.RELEASE_FAILED;
}

export class FileReleaseAuthority {
  readonly #releases = new Map<string, Promise<FileRelease>>();
  readonly #remove: (path: string) => Promise<void>;

  /** @param remove the deletion primitive; `fs.unlink` unless a test needs another. */
  constructor(remove: (path: string) => Promise<void> = unlink) {
    this.#remove = remove;
  }

  /** Releases `path` once; later and concurrent calls share the first attempt's result. */
  release(path: string): Promise<FileRelease> {
    const key = resolve(path);
    let pending = this.#releases.get(key);
    if (!pending) {
      pending = this.#remove(key).then(
        () => ({ path, released: true, code: null }),
        (err: unknown) =>
          (err as { code?: unknown }).code === 'ENOENT'
            ? { path, released: true, code: null }
            : { path, released: false, code: releaseErrorCode(err) },
      );
      this.#releases.set(key, pending);
    }
    return pending;
  }

  /** Releases every path and reports what was deleted and what failed. */
  async releaseAll(paths: readonly string[]): Promise<ReleaseReport> {
    const results = await Promise.all(paths.map((p) => this.release(p)));
    return {
      deleted: results.filter((r) => r.released).map((r) => r.path),
      failures: results.filter((r) => !r.released).map((r) => ({ path: r.path, code: r.code ?? CleanupCode.RELEASE_FAILED })),
    };
  }
}

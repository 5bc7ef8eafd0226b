/**
 * FileReleaseAuthority: deletes each physical file at most once, however many views of an
 * artifact ask. A file counts as released only when the deletion primitive removed it or proved
 * it gone from where the run wrote it; a bare ENOENT proves nothing (the release may be looking
 * at another machine's disk) and is reported as FILES_NOT_VISIBLE. Any failure becomes a stable
 * code, never an exception to the caller.
 */
import { unlink } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CleanupCode, type ReleaseReport } from '../lifecycle/terminal';

/** Result of one file's release. */
export interface FileRelease {
  path: string;
  released: boolean;
  code: string | null;
}

const ERRNO_CODES = new Set(['EACCES', 'EPERM', 'EBUSY', 'EROFS', 'EISDIR', 'ENOTEMPTY', 'EIO', 'ENOTDIR', 'ELOOP']);
const CLEANUP_CODES = new Set<string>(Object.values(CleanupCode));

/** The stable code for a failed deletion: an errno, one of ours ({@link CleanupCode}), else RELEASE_FAILED. */
export function releaseErrorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOENT') return CleanupCode.FILES_NOT_VISIBLE;
  return typeof code === 'string' && (ERRNO_CODES.has(code) || CLEANUP_CODES.has(code)) ? code : CleanupCode.RELEASE_FAILED;
}

export class FileReleaseAuthority {
  readonly #releases = new Map<string, Promise<FileRelease>>();
  readonly #remove: (path: string) => Promise<void>;

  /**
   * @param remove the deletion primitive: resolves once the file is gone (removed, or proved gone),
   * rejects with a coded error otherwise. `fs.unlink` unless the caller can prove more.
   */
  constructor(remove: (path: string) => Promise<void> = unlink) {
    this.#remove = remove;
  }

  /** Releases `path` once; later and concurrent calls share the first attempt's result. */
  release(path: string): Promise<FileRelease> {
    // A URL (s3://…) is its own key; a path is keyed by its absolute form.
    const key = /^[a-z][a-z0-9+.-]*:\/\//.test(path) ? path : resolve(path);
    let pending = this.#releases.get(key);
    if (!pending) {
      pending = this.#remove(key).then(
        () => ({ path, released: true, code: null }),
        (err: unknown) => ({ path, released: false, code: releaseErrorCode(err) }),
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

/** Rejection handlers for file calls whose failure of one kind means the work is already done. */

/** Lets a rejection with errno `code` pass as done (resolving to undefined) and rethrows any other: `unlink(p).catch(ignoreError('ENOENT'))`. */
export function ignoreError(code: string): (err: unknown) => undefined {
  return (err) => {
    if ((err as { code?: string }).code !== code) throw err;
    return undefined;
  };
}

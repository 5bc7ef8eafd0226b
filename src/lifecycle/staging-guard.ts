/**
 * The owned staging handle: the one way code creates a target staging table. Ownership passes
 * to the caller only when `materialize` resolves; any failure or cancellation before that drops
 * the table, and a failed drop is attached to the primary error as a redacted note.
 */
import { ErrorCode, PgExtractError, addNote } from '../errors';

/** Options for {@link ownedStagingHandle}. */
export interface OwnedStagingOptions<H, R> {
  /** Creates the staging table and returns a handle to it. */
  create: () => Promise<H>;
  /** Drops it. Called at most once, only when ownership did not pass. */
  drop: (handle: H) => Promise<void>;
  /** Fills and validates it. Resolving hands ownership to the caller. */
  materialize: (handle: H, signal: AbortSignal | undefined) => Promise<R>;
  /** Cancels the construction; the table is dropped. */
  signal?: AbortSignal;
}

/** The note attached when the drop fails: the error's class or code only, never its message. */
function stagingCleanupNote(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  const kind = typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? code : ((err as Error | null)?.name ?? 'Error');
  return `staging handle cleanup failed: ${kind}`;
}

function cancelled(): PgExtractError {
  return new PgExtractError(ErrorCode.STAGING_CANCELLED, 'staging construction was cancelled');
}

export async function ownedStagingHandle<H, R>(options: OwnedStagingOptions<H, R>): Promise<{ handle: H; result: R }> {
  const { signal } = options;
  if (signal?.aborted) throw cancelled();
  const handle = await options.create();
  try {
    const result = await raceAbort(options.materialize(handle, signal), signal);
    return { handle, result };
  } catch (primary) {
    try {
      await options.drop(handle);
    } catch (dropErr) {
      addNote(primary, stagingCleanupNote(dropErr));
    }
    throw primary;
  }
}

function raceAbort<R>(work: Promise<R>, signal: AbortSignal | undefined): Promise<R> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(cancelled());
  }
  return new Promise<R>((resolvePromise, reject) => {
    const onAbort = (): void => reject(cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolvePromise(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

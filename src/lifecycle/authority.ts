/**
 * ExtractionLifecycleAuthority: the single owner of an extraction's current receipt.
 *
 *   pending --acquire()--> reading --acquireSnapshot()?--> reading --complete()--> complete
 *
 * Each transition swaps in a new frozen receipt; a receipt someone already holds never changes.
 * Timestamps are passed in by strategies that read a server clock, or taken from `new Date()`
 * (in a workflow, Temporal's deterministic clock).
 */
import { ErrorCode, PgExtractError } from '../errors';
import { ClockAuthority, createReceipt, type Evidence, type ExtractionLifecycleReceipt } from './receipt';
import { toUtcTimestamp } from './utc-timestamp';

/** Options for {@link ExtractionLifecycleAuthority}. */
export interface ExtractionLifecycleAuthorityOptions {
  /**
   * Who issues the window timestamps.
   * @default ClockAuthority.orchestratorUtc
   */
  clockAuthority?: string;
  /** `false` for sources whose partitions are read at different times (no snapshot to share); recorded on every receipt. */
  pointInTime?: false;
}

/** The lifecycle state the current receipt is in. */
export type LifecycleState = 'pending' | 'reading' | 'complete';

export class ExtractionLifecycleAuthority {
  readonly clockAuthority: string;
  readonly #pointInTime: false | undefined;
  #receipt: ExtractionLifecycleReceipt | null = null;

  constructor(options: ExtractionLifecycleAuthorityOptions = {}) {
    this.clockAuthority = options.clockAuthority ?? ClockAuthority.orchestratorUtc;
    this.#pointInTime = options.pointInTime;
  }

  get state(): LifecycleState {
    if (this.#receipt === null) return 'pending';
    return this.#receipt.extractionCompletedAt === null ? 'reading' : 'complete';
  }

  /** The current frozen receipt; `null` while pending (a lazy artifact not yet consumed). */
  latest(): ExtractionLifecycleReceipt | null {
    return this.#receipt;
  }

  /** Marks the truthful start of the source read. Only the first call records; later calls return it. */
  acquire(at?: string | Date): ExtractionLifecycleReceipt {
    if (this.#receipt === null) {
      this.#receipt = createReceipt({
        extractionStartedAt: toUtcTimestamp(at ?? new Date(), 'extractionStartedAt'),
        clockAuthority: this.clockAuthority,
        ...(this.#pointInTime === undefined ? {} : { pointInTime: this.#pointInTime }),
      });
    }
    return this.#receipt;
  }

  /**
   * Records a real server snapshot. `sourceToken` is the *digest* of the server-issued token.
   * Repeating the same authority and token is a no-op; different values fail with SNAPSHOT_CHANGED.
   * Acquires first when still pending, with the snapshot time as the window start.
   */
  acquireSnapshot(snapshotAuthority: string, sourceToken: string, at?: string | Date): ExtractionLifecycleReceipt {
    const snapshotAt = toUtcTimestamp(at ?? new Date(), 'snapshotAcquiredAt');
    const current = this.acquire(snapshotAt);
    if (current.snapshotAcquiredAt !== null) {
      if (current.snapshotAuthority === snapshotAuthority && current.sourceToken === sourceToken) return current;
      throw new PgExtractError(ErrorCode.SNAPSHOT_CHANGED, 'a different snapshot was already recorded for this extraction');
    }
    if (current.extractionCompletedAt !== null) {
      throw new PgExtractError(ErrorCode.EXTRACTION_ALREADY_COMPLETE, 'cannot record a snapshot after completion');
    }
    this.#receipt = createReceipt({ ...current, snapshotAcquiredAt: snapshotAt, snapshotAuthority, sourceToken });
    return this.#receipt;
  }

  /**
   * Call only after the source is exhausted and its row/byte evidence is published. Swaps in the
   * complete receipt; idempotent once complete; EXTRACTION_NOT_STARTED before `acquire()`.
   */
  complete(evidence: readonly Evidence[], at?: string | Date): ExtractionLifecycleReceipt {
    const current = this.#receipt;
    if (current === null) throw new PgExtractError(ErrorCode.EXTRACTION_NOT_STARTED, 'complete() called before acquire()');
    if (current.extractionCompletedAt !== null) return current;
    this.#receipt = createReceipt({
      ...current,
      extractionCompletedAt: toUtcTimestamp(at ?? new Date(), 'extractionCompletedAt'),
      evidence,
    });
    return this.#receipt;
  }
}

/**
 * What a strategy hands back: the artifact plus the authority that owns its timing. The receipt is
 * read live from the authority, so wrappers and rebinds never hold a stale copy.
 */
export class ExtractResult<A> {
  constructor(
    readonly artifact: A,
    readonly authority: ExtractionLifecycleAuthority,
  ) {}

  get extractionReceipt(): ExtractionLifecycleReceipt | null {
    return this.authority.latest();
  }
}

/**
 * The terminal decision: one per artifact, first wins, every later or concurrent call gets the
 * same ArtifactTerminalReceipt. The authority is pure: it is told how to close the source and
 * release files, so the same code runs inside an activity (real files) and inside the workflow
 * (release through a cleanup activity).
 */
import { ErrorCode, PgExtractError } from '../errors';

export const TERMINAL_OUTCOMES = ['success', 'abort', 'retain_commit_unknown'] as const;
/** `success`: target commit acknowledged; `abort`: load did not commit; `retain_commit_unknown`: ambiguous. */
export type TerminalOutcome = (typeof TERMINAL_OUTCOMES)[number];

export function isTerminalOutcome(value: unknown): value is TerminalOutcome {
  return typeof value === 'string' && (TERMINAL_OUTCOMES as readonly string[]).includes(value);
}

/** What the terminal decision did. Stable across repeated calls. */
export interface ArtifactTerminalReceipt {
  readonly outcome: TerminalOutcome;
  readonly decidedAt: string;
  /** True when file deletion was attempted (success, abort); false when evidence is retained. */
  readonly cleanupAttempted: boolean;
  /** Never true when a deletion or a source close actually failed. */
  readonly cleanupSucceeded: boolean;
  /** A stable code (errno such as EACCES, or ours such as RELEASE_FAILED), never a message. */
  readonly cleanupErrorCode: string | null;
  readonly filesDeleted: readonly string[];
  readonly filesRetained: readonly string[];
}

/** Outcome of releasing a set of files. Implementations report failures; they do not throw. */
export interface ReleaseReport {
  deleted: string[];
  /** Files not released, and folders not removed, each with a stable code. */
  failures: { path: string; code: string }[];
}

/** What the authority acts on. */
export interface TerminalResources {
  /** Every physical file of the artifact. */
  files: readonly string[];
  /** Deletes files at most once each (see FileReleaseAuthority). */
  releaseFiles(files: readonly string[]): Promise<ReleaseReport>;
  /** Closes live source resources: commit on success, rollback otherwise. Never evidence. */
  closeSource?(outcome: TerminalOutcome): Promise<void>;
}

/** Our cleanup codes, from the error table (errno codes such as EACCES are reported as they are). */
export const CleanupCode = {
  FILES_NOT_VISIBLE: ErrorCode.FILES_NOT_VISIBLE,
  /** The folder carries another run's ownership marker: nothing in it is this run's to delete. */
  OUTPUT_FOLDER_OWNED: ErrorCode.OUTPUT_FOLDER_OWNED,
  /** The path's real location (symlinks followed) leaves the output root: not deleted. */
  OUTPUT_PATH_ESCAPES_ROOT: ErrorCode.OUTPUT_PATH_ESCAPES_ROOT,
  RELEASE_FAILED: ErrorCode.RELEASE_FAILED,
  /** Object storage refused the delete or the check that follows it (credentials, policy). */
  S3_ACCESS_DENIED: ErrorCode.S3_ACCESS_DENIED,
  S3_BUCKET_NOT_FOUND: ErrorCode.S3_BUCKET_NOT_FOUND,
  S3_OBJECT_STILL_PRESENT: ErrorCode.S3_OBJECT_STILL_PRESENT,
  S3_REQUEST_FAILED: ErrorCode.S3_REQUEST_FAILED,
  S3_REQUEST_REFUSED: ErrorCode.S3_REQUEST_REFUSED,
  S3_UNREACHABLE: ErrorCode.S3_UNREACHABLE,
  SOURCE_CLOSE_FAILED: ErrorCode.SOURCE_CLOSE_FAILED,
} as const;

export class TerminalAuthority {
  readonly #resources: TerminalResources;
  #decision: Promise<ArtifactTerminalReceipt> | null = null;
  #outcome: TerminalOutcome | null = null;

  constructor(resources: TerminalResources) {
    this.#resources = resources;
  }

  get files(): readonly string[] {
    return this.#resources.files;
  }

  /** The outcome of the first decision, or null while undecided. */
  get outcome(): TerminalOutcome | null {
    return this.#outcome;
  }

  /** Records `outcome` unless a decision exists; returns the one receipt either way. */
  decide(outcome: TerminalOutcome): Promise<ArtifactTerminalReceipt> {
    if (this.#decision) return this.#decision;
    if (!isTerminalOutcome(outcome)) {
      return Promise.reject(new PgExtractError(ErrorCode.TERMINAL_OUTCOME_INVALID, `unknown terminal outcome ${String(outcome)}`, { field: 'outcome' }));
    }
    this.#outcome = outcome;
    this.#decision = this.#apply(outcome, new Date().toISOString());
    return this.#decision;
  }

  async #apply(outcome: TerminalOutcome, decidedAt: string): Promise<ArtifactTerminalReceipt> {
    let closeCode: string | null = null;
    if (this.#resources.closeSource) {
      try {
        await this.#resources.closeSource(outcome);
      } catch {
        closeCode = CleanupCode.SOURCE_CLOSE_FAILED;
      }
    }
    const files = [...this.#resources.files];
    // Retained files are evidence: nothing is deleted, so nothing can fail to be.
    const retain = outcome === 'retain_commit_unknown';
    const report = retain ? { deleted: [], failures: [] } : await this.#release(files);
    const deleted = new Set(report.deleted);
    const missed = !retain && !files.every((f) => deleted.has(f));
    const errorCode = report.failures[0]?.code ?? closeCode ?? (missed ? CleanupCode.RELEASE_FAILED : null);
    return Object.freeze({
      outcome,
      decidedAt,
      cleanupAttempted: !retain,
      cleanupSucceeded: errorCode === null,
      cleanupErrorCode: errorCode,
      filesDeleted: Object.freeze(files.filter((f) => deleted.has(f))),
      filesRetained: Object.freeze(files.filter((f) => !deleted.has(f))),
    });
  }

  /** Release never throws to the caller: a throwing releaser counts as every file failing. */
  async #release(files: string[]): Promise<ReleaseReport> {
    try {
      return await this.#resources.releaseFiles(files);
    } catch {
      return { deleted: [], failures: files.map((path) => ({ path, code: CleanupCode.RELEASE_FAILED })) };
    }
  }
}

/**
 * A wrapper, projection or rebind of an artifact. Every view decides through its root's
 * authority, so a view can never reverse the root's decision or publish a different receipt.
 */
export class ArtifactView {
  private constructor(
    readonly terminal: TerminalAuthority,
    readonly files: readonly string[],
  ) {}

  static root(terminal: TerminalAuthority): ArtifactView {
    return new ArtifactView(terminal, terminal.files);
  }

  /** A view over a subset of the root's files, sharing its decision. */
  project(files: readonly string[]): ArtifactView {
    const owned = new Set(this.terminal.files);
    const stranger = files.find((f) => !owned.has(f));
    if (stranger !== undefined) {
      throw new PgExtractError(ErrorCode.VIEW_FILE_NOT_OWNED, 'a projection may only cover files of its root artifact');
    }
    return new ArtifactView(this.terminal, [...files]);
  }

  /** Moves this view to another authority; refused once either side has decided. */
  rebind(target: TerminalAuthority): ArtifactView {
    if (this.terminal.outcome !== null || target.outcome !== null) {
      throw new PgExtractError(ErrorCode.TERMINAL_REBIND_AFTER_DECISION, 'cannot rebind an artifact view once a terminal decision exists');
    }
    return new ArtifactView(target, this.files);
  }

  decide(outcome: TerminalOutcome): Promise<ArtifactTerminalReceipt> {
    return this.terminal.decide(outcome);
  }
}

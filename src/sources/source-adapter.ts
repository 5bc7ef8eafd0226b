/**
 * The contract every source joins: how the worker reads a table from it, and what its receipts
 * may claim. A source looks tables up in its catalog, opens a read at the truthful boundary (the
 * receipt's window starts before anything is read), plans ranges inside that read, streams one
 * range at a time into an output sink (on any worker, from the read's serializable handle), and
 * closes the read with an outcome. The conformance kit (test/sources/conformance.ts) checks each
 * rule against a live server; README "Adding a source" walks through it.
 */
import type { FileReceipt } from '../contract/file-receipt';
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import type { TableRequest } from '../postgres/catalog';
import type { SplitKey } from '../contract/partition-range';
import type { ExportFormat } from '../contract/formats';
import type { PartitionRange } from '../contract/partition-range';
import type { SourceIdentity } from '../contract/partition-range';
import type { SourceColumn } from '../contract/source-column';
import type { CopiedOutput, OutputSink } from '../storage/output-sink';
import type { TerminalOutcome } from '../lifecycle/terminal';

/** The source kinds the worker can read, chosen by the configured URL's scheme. */
export type SourceKind = 'postgresql' | 'mysql';

/**
 * What a source's receipts may claim. The clock authority is whoever issues the window timestamps.
 * A snapshot authority (and a source token) only with a native primitive that proves every range
 * was read from one snapshot; a generic source keeps both null and says `pointInTime: false`.
 */
export interface SourceClaims {
  clockAuthority: string;
  snapshotAuthority: string | null;
}

/** A table as the source's catalog describes it. */
export interface SourceTable {
  schema: string;
  table: string;
  columns: SourceColumn[];
  primaryKey: string[];
  /** The key ranges split on, or null when the source has none it can use. */
  key: SplitKey | null;
}

/**
 * Everything a range copy needs, as plain data: it travels in workflow history to whichever
 * worker copies the range. Snapshot fields are null for a source without a native snapshot.
 */
export interface ReadHandle {
  /** The snapshot the ranges import (PostgreSQL: a pg_export_snapshot() id); null without one. */
  snapshotId: string | null;
  /** What every range must prove it saw (a sha256 digest); null without a snapshot. */
  snapshotDigest: string | null;
  /** The cluster and database the snapshot lives on, when the source can name them. */
  source?: SourceIdentity;
  /** `columns` in file order; absent in a set's plan (PostgreSQL only), whose reads take every column (see activity-requests.ts). */
  table: { schema: string; table: string; columns?: string[] };
  key: SplitKey | null;
}

/** What planning decided, inside the read. */
export interface ReadPlan {
  table: SourceTable;
  ranges: PartitionRange[];
  /** The rows `auto` planned for; null for a fixed count. */
  rowCount: number | null;
  /** The session that holds the read open (PostgreSQL's coordinator pid); null when nothing is held. */
  coordinatorPid: number | null;
}

/** How a read is opened and planned. */
export interface OpenOptions {
  partitions: number | 'auto';
  /** How long to wait for a table lock, where the source takes one. */
  lockTimeoutMs?: number;
  /** The format its ranges will be copied in: a source refuses here a column it cannot write so. @default 'csv' */
  format?: ExportFormat['format'];
  /** Stops the opening (its wait for a lock, its planning) where the source can: it fails at once. */
  signal?: AbortSignal;
}

/** How one range is copied. */
export interface RangeCopyOptions {
  format: ExportFormat;
  lockTimeoutMs?: number;
  onBytes?: (bytes: number) => void;
  signal?: AbortSignal;
}

/** One committed range: the output's receipt plus who read it and when, on the source's clock. */
export interface RangeCopy extends CopiedOutput {
  /** The server session that read the range (PostgreSQL backend pid, MySQL connection id). */
  sessionId: number;
  /** Digest of the snapshot the session proved it read; null without a native snapshot. */
  snapshotDigest: string | null;
  /** The range's own window, on the claims' clock: inside the read's receipt window. */
  startedAt: string;
  completedAt: string;
}

/** An open read: its receipt started before planning read anything. */
export interface SourceRead {
  readonly handle: ReadHandle;
  readonly plan: ReadPlan;
  /** The receipt so far: started, and complete only after close('success'). */
  receipt(): ExtractionLifecycleReceipt;
  /** Proves what the read holds is still alive (a no-op when it holds nothing). */
  probe(): Promise<void>;
  /**
   * Ends the read with the run's terminal outcome. `success` needs every planned range read: `rangesRead` of them (default: one
   * evidence entry per range; batched files give several per range, an empty range none), else
   * EXTRACTION_INCOMPLETE and the read stays open; it returns the complete receipt. `abort` and
   * `retain_commit_unknown` (outputs kept as evidence) both roll back and return null, never throw, and leave no session or transaction behind. Later calls after the first that ended it are no-ops.
   */
  close(outcome: 'success', evidence: readonly FileReceipt[], rangesRead?: number): Promise<ExtractionLifecycleReceipt>;
  close(outcome: Exclude<TerminalOutcome, 'success'>): Promise<null>;
}

export interface SourceAdapter {
  readonly kind: SourceKind;
  readonly claims: SourceClaims;
  /** Opens a read at the truthful boundary and plans its ranges inside it. */
  open(request: TableRequest, options: OpenOptions): Promise<SourceRead>;
  /** Streams one planned range into `sink` on a session of its own, and commits the output. */
  copyRange(handle: ReadHandle, range: PartitionRange, sink: OutputSink, options: RangeCopyOptions): Promise<RangeCopy>;
}

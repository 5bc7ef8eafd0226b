/** Types that cross the workflow boundary: manifest, status, results. Types only, no code. */
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import type { ArtifactTerminalReceipt, TerminalOutcome } from '../lifecycle/terminal';
import type { PartitionRange } from './partition-range';
import type { TargetCommitOutcome } from './commit-report';
import type { FileReceipt, WrittenFile } from './file-receipt';
import type { SourceColumn } from './source-column';

/** `failed`: the run failed before any outcome was decided (its failure says why); `done`: it completed, or was cancelled. */
export type Phase = 'planning' | 'extracting' | 'loading' | 'awaiting_commit' | 'cleaning_up' | 'done' | 'failed';

/** What the target owner says about its commit (checked by parseCommitReport). */
export type { TargetCommit, TargetCommitOutcome } from './commit-report';

/** One written file: its receipt (`name` is the path relative to the output root or the `s3://` URL, as in the evidence), where it lives, what it holds. */
export interface ManifestFile extends FileReceipt {
  /** Absolute path on the worker host, or `s3://bucket/key`. */
  path: string;
  /** The source table (`schema.table`) in a run of several tables; absent in a one-table run (the manifest's table). */
  table?: string;
  /** The object's ETag when the output is on S3; null for a local file. */
  etag: string | null;
  partition: number;
  /** The file's place in its partition's sequence when files are batched (--max-file-bytes/--max-file-rows); absent otherwise. */
  batch?: number;
  range: PartitionRange;
  /** The session that read it: pg_backend_pid(), or a MySQL source's CONNECTION_ID(). */
  backendPid: number;
  /** Digest of the pg_current_snapshot() text that session saw; null for a source without a native snapshot (MySQL). */
  snapshotDigest: string | null;
}

/** The data package written next to the files (`datapackage.json`), receipted like them. */
export interface DataPackageFile extends WrittenFile {
  path: string;
  name: string;
  etag: string | null;
}

export interface Manifest {
  workflowId: string;
  table: string;
  /** The extraction attempt (one exported snapshot) these files come from. */
  attempt: number;
  strategy: 'whole_copy' | 'partitioned_copy' | 'internal_query' | 'stream_copy';
  coordinatorPid: number | null;
  /** Digest of the coordinator's pg_current_snapshot() text; every file's snapshotDigest equals it. Null when no snapshot is claimed (internal query, a stream that failed definitely). */
  snapshotDigest: string | null;
  files: ManifestFile[];
  totals: { rows: number; bytes: number };
  /** The exported columns in file order, and the primary key; null in runs started by older code. */
  columns: SourceColumn[] | null;
  primaryKey: string[] | null;
  /** The run's `datapackage.json`; null for runs without files and runs started by older code. */
  dataPackage: DataPackageFile | null;
  /**
   * False in a result whose files[] is left out (see the manifest query and the receipt's
   * evidence): always a run of several tables', and a one-table run's when only that makes the
   * result fit in one payload; absent otherwise.
   */
  filesInResult?: false;
  /**
   * Null when this run observed no finished read: an internal-query or stream load that the fence
   * answered on a retry, or a stream that failed before every partition was in staging.
   */
  extractionReceipt: ExtractionLifecycleReceipt | null;
}

/** One snapshot attempt and how it ended. */
export interface AttemptRecord {
  attempt: number;
  result: 'completed' | 'snapshot_lost' | 'failed';
  /** A stable code for why it ended, when it did not complete. */
  reason: string | null;
  /** Planned files of a discarded attempt that were released (deleted, or proved gone). */
  releasedFiles: number;
  /** Why discarding the attempt's files or folder failed (a stable code, see CleanupCode), else null. */
  cleanupErrorCode: string | null;
}

export interface ExtractionStatus {
  phase: Phase;
  table: string;
  attempt: number;
  partitionsDone: number;
  partitionsTotal: number;
  /** Tables whose every partition is written, of the run's tables (runs of several tables only). */
  tablesDone?: number;
  tablesTotal?: number;
  rows: number;
  bytes: number;
  outcome: TerminalOutcome | null;
  /**
   * The copy batch (child workflow) of a set's run that is copying now; what it has copied so far
   * is counted above only when it ends, and is its own {@link BatchStatus} until then.
   */
  batchWorkflowId?: string | null;
}

/** What one copy batch of a set's run has copied so far (its `batchStatus` query). */
export interface BatchStatus {
  partitionsDone: number;
  partitionsTotal: number;
  rows: number;
  bytes: number;
}

export interface ExtractionResult {
  manifest: Manifest;
  extractionReceipt: ExtractionLifecycleReceipt | null;
  terminalReceipt: ArtifactTerminalReceipt;
  attempts: AttemptRecord[];
  /**
   * The operation id of the report that decided the outcome, when it gave one (the built-in loader's
   * fence id); null when the deadline or a cancellation decided, whatever report came later.
   */
  operationId: string | null;
  /** What the built-in loader reported, when `target` was set. */
  load: { outcome: TargetCommitOutcome; reason: string | null; rows: number | null; message?: string } | null;
}

/**
 * Names shared by the workflow, the worker and the client: task queue, signal, update, queries
 * and search attributes. Defined once so a rename can never leave one side behind.
 */
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ArtifactTerminalReceipt } from '../lifecycle/terminal';
import type { BatchStatus, ExtractionStatus, Manifest, TargetCommit } from './extraction-types';

/** The default task queue (`PG_EXTRACT_TASK_QUEUE` overrides it). */
export const DEFAULT_TASK_QUEUE = 'pg-extract';

/** The target owner reports its commit; fire-and-forget. */
export const targetCommitSignal = defineSignal<[TargetCommit]>('targetCommit');
/** The target owner reports its commit and receives the terminal receipt. */
export const commitUpdate = defineUpdate<ArtifactTerminalReceipt, [TargetCommit]>('commit');
/**
 * Returns true once the manifest exists, so a client waits with one call instead of polling the
 * query (each poll costs the worker and the server a workflow query); the client then reads the
 * manifest with {@link manifestQuery}. Returning a flag, not the manifest, keeps a large set's
 * manifest out of the history, where an update's result is stored.
 */
export const manifestReadyUpdate = defineUpdate<boolean>('manifestReady');
/** The manifest of the completed extraction (null until then). */
export const manifestQuery = defineQuery<Manifest | null>('manifest');
/** Phase and progress. */
export const statusQuery = defineQuery<ExtractionStatus>('status');
/**
 * The terminal receipt once the outcome is decided (null before). A run cancelled before its
 * decision ends cancelled, and a cancelled run's result cannot be read: this still answers.
 */
export const terminalReceiptQuery = defineQuery<ArtifactTerminalReceipt | null>('terminalReceipt');
/** A set's copy batch: what it has copied so far (the parent's status counts it when the batch ends). */
export const batchStatusQuery = defineQuery<BatchStatus>('batchStatus');

/** Search attributes shown in (and filterable from) Temporal Web UI. */
export const SearchAttributes = {
  table: defineSearchAttributeKey('PgExtractTable', SearchAttributeType.KEYWORD),
  phase: defineSearchAttributeKey('PgExtractPhase', SearchAttributeType.KEYWORD),
  outcome: defineSearchAttributeKey('PgExtractOutcome', SearchAttributeType.KEYWORD),
  rows: defineSearchAttributeKey('PgExtractRows', SearchAttributeType.INT),
} as const;

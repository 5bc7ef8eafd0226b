/**
 * What a run's manifest and result may weigh. Both are single Temporal payloads (the manifest is the
 * `manifest` query's answer, the result the completion's), limited to 2 MB, and both grow with every
 * file: a manifest entry is about 580 bytes, its receipt evidence 240 more, its path again in the
 * terminal receipt. Past the limit the query fails, and the completion fails after the files were
 * released, again and again, so the run never closes. So an attempt whose files and evidence would
 * not fit fails as soon as its copy returns, before the receipt is completed, and one whose manifest
 * or result would not, once its manifest is assembled: always before any commit decision, with
 * RUN_EXCEEDS_PAYLOAD_LIMIT, its files discarded as for any failed attempt. A one-table run whose
 * result fits only without `files[]` leaves it out, as a set's always does (the manifest query and
 * the receipt's evidence still list every file).
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { ExtractionInput } from '../contract/extraction-input';
import type { Manifest, ManifestFile } from '../contract/extraction-types';
import { runOutputs } from '../contract/run-outputs';
import { isTableSet } from '../contract/table-selection';
import { ErrorCode } from '../errors';
import { PAYLOAD_BUDGET_BYTES, jsonBytes } from '../contract/payload-limit';

/** The result's bytes for its manifest `m`: `m`, the receipt again at the top, and every output named in the terminal receipt. */
const resultBytes = (m: Manifest, manifest: Manifest): number => jsonBytes([m, manifest.extractionReceipt, runOutputs(manifest)]);

const withoutFiles = (manifest: Manifest): Manifest => ({ ...manifest, files: [], filesInResult: false });

/** The manifest as the run's result carries it: without `files[]` for a set, or when the result would not fit with them. */
export function manifestInResult(input: ExtractionInput, manifest: Manifest): Manifest {
  return isTableSet(input) || resultBytes(manifest, manifest) > PAYLOAD_BUDGET_BYTES ? withoutFiles(manifest) : manifest;
}

/**
 * Fails the attempt with RUN_EXCEEDS_PAYLOAD_LIMIT unless its files and their evidence (the
 * completion's request, then most of the manifest) fit in a payload: checked as soon as the copy
 * returns, before the receipt is completed.
 */
export function requireFilesFit(files: readonly ManifestFile[], evidence: readonly unknown[]): void {
  const bytes = jsonBytes(files) + jsonBytes(evidence);
  if (bytes <= PAYLOAD_BUDGET_BYTES) return;
  throw ApplicationFailure.nonRetryable(
    `the run's ${files.length} files and their receipt evidence take ${bytes} bytes; they must fit in ${PAYLOAD_BUDGET_BYTES} (a Temporal payload)`,
    ErrorCode.RUN_EXCEEDS_PAYLOAD_LIMIT,
  );
}

/**
 * Fails the attempt with RUN_EXCEEDS_PAYLOAD_LIMIT before anything is copied when the least its
 * planned files could weigh does not fit: each name with no rows, no bytes and a sha256, once as a
 * manifest entry and once as receipt evidence (both are larger in fact). Such a copy would be
 * thrown away once done (see {@link requireFilesFit}), hours later for a big database.
 */
export function requirePlanFits(names: readonly string[]): void {
  const least = 2 * jsonBytes(names.map((name) => ({ name, rows: 0, bytes: 0, sha256: SHA256_HEX })));
  if (least <= PAYLOAD_BUDGET_BYTES) return;
  throw ApplicationFailure.nonRetryable(
    `the run plans ${names.length} files, whose names and checksums alone would take at least ${least} bytes of its manifest and receipt; ` +
      `they must fit in ${PAYLOAD_BUDGET_BYTES} (a Temporal payload)`,
    ErrorCode.RUN_EXCEEDS_PAYLOAD_LIMIT,
  );
}

/** A sha256 as receipts write it: 64 hex digits. */
const SHA256_HEX = '0'.repeat(64);

/** Fails the attempt with RUN_EXCEEDS_PAYLOAD_LIMIT unless its manifest and the run's result fit in a payload. */
export function requireManifestFits(manifest: Manifest): void {
  const query = jsonBytes(manifest);
  // The smallest result the run can return: without files[], which manifestInResult leaves out whenever they do not fit.
  const result = resultBytes(withoutFiles(manifest), manifest);
  if (Math.max(query, result) <= PAYLOAD_BUDGET_BYTES) return;
  throw ApplicationFailure.nonRetryable(
    `the run's manifest of ${manifest.files.length} files takes ${query} bytes and its result ${result}; ` +
      `each must fit in ${PAYLOAD_BUDGET_BYTES} (a Temporal payload)`,
    ErrorCode.RUN_EXCEEDS_PAYLOAD_LIMIT,
  );
}

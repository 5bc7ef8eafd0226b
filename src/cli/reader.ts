/**
 * `pg-extract reader <workflowId> --engine duckdb`: the statement that reads a run's files exactly,
 * made from the run's data package as its output store holds it. Checks the run's files are still
 * there first (a released run's, or a moved folder's, are not), so a statement it prints can run.
 */
import { createHash } from 'node:crypto';
import { posix, resolve } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { ErrorCode, PgExtractError, errorCodeOf } from '../errors';
import type { DataPackage } from '../readers/data-package';
import { duckdbStatement } from '../readers/duckdb';
import { manifestQuery } from '../contract/definitions';
import type { ExtractionResult, Manifest } from '../contract/extraction-types';
import type { OutputStores } from '../storage/output-stores';
import { isS3Url } from '../contract/s3-url';

const READER_ENGINES = ['duckdb'] as const;

export function parseEngine(engine: string): (typeof READER_ENGINES)[number] {
  const known = READER_ENGINES.find((e) => e === engine);
  if (!known)
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `unknown engine ${JSON.stringify(engine)}; known: ${READER_ENGINES.join(', ')}`, { field: 'engine' });
  return known;
}

/** The manifest of a run whose files still exist: a running run's, or a closed run's that retained them. */
async function manifestWithFiles(client: Client, workflowId: string): Promise<Manifest> {
  const handle = client.workflow.getHandle(workflowId);
  const description = await handle.describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError) throw new PgExtractError(ErrorCode.INPUT_INVALID, `no workflow ${workflowId}`, { field: 'workflowId' });
    throw err;
  });
  if (description.status.name === 'RUNNING') {
    const manifest = await handle.query(manifestQuery);
    if (!manifest) throw new PgExtractError(ErrorCode.DATA_PACKAGE_ABSENT, `${workflowId} has not finished extracting`);
    return manifest;
  }
  const result = (await handle.result()) as ExtractionResult;
  if (result.terminalReceipt.outcome !== 'retain_commit_unknown') {
    throw new PgExtractError(ErrorCode.RUN_FILES_GONE, `${workflowId} ended ${result.terminalReceipt.outcome}: its files were deleted`);
  }
  return result.manifest;
}

/** Reads the run's package from its store, after checking every file of the run is there with its receipted size. */
async function storedPackage(stores: OutputStores, manifest: Manifest): Promise<{ pkg: DataPackage; folder: string }> {
  const receipt = manifest.dataPackage;
  if (!receipt)
    throw new PgExtractError(ErrorCode.DATA_PACKAGE_ABSENT, `${manifest.workflowId} has no data package (no files, or started by an older version)`);
  await stores.checkVisible([...manifest.files, receipt]).catch((err: unknown) => {
    if (errorCodeOf(err) !== ErrorCode.OUTPUT_NOT_VISIBLE) throw err;
    throw new PgExtractError(ErrorCode.RUN_FILES_GONE, `a file of ${manifest.workflowId} is gone: ${(err as Error).message}`, { cause: err });
  });
  const body = await buffer(await stores.of(receipt.name).read(receipt.name));
  // The statement is built from the package: one changed since its receipt (same size, other text) is not the run's.
  if (createHash('sha256').update(body).digest('hex') !== receipt.sha256) {
    throw new PgExtractError(ErrorCode.RUN_FILES_GONE, `${receipt.name} does not match its manifest entry (sha256): it changed since the run wrote it`);
  }
  return { pkg: JSON.parse(body.toString('utf8')) as DataPackage, folder: posix.dirname(receipt.name) };
}

/** The statement for the table `wanted` (the run's only table when absent). */
export async function readerStatement(
  client: Client,
  stores: OutputStores,
  outputRoot: string,
  workflowId: string,
  wanted?: { schema: string; table: string },
): Promise<string> {
  const { pkg, folder } = await storedPackage(stores, await manifestWithFiles(client, workflowId));
  const resources = wanted ? pkg.resources.filter((r) => r.pgTable === `${wanted.schema}.${wanted.table}`) : pkg.resources;
  const resource = resources[0];
  if (!resource || resources.length > 1) {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `pick one table with --table: ${pkg.resources.map((r) => r.pgTable).join(', ')}`, { field: 'table' });
  }
  // Paths are relative to the package: this reader's output root (or the bucket) locates them.
  const locate = (path: string): string => (isS3Url(folder) ? `${folder}/${path}` : resolve(outputRoot, folder, path));
  return duckdbStatement(resource, resource.path.map(locate));
}

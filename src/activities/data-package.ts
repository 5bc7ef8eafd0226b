/**
 * Writes a run's `datapackage.json` next to its files (same folder or object prefix), through the
 * same store and sink as the files, so it is committed atomically and receipted (bytes, sha256).
 * One table's package describes the columns its plan recorded; a set's reads each table's columns
 * and primary key inside the run's snapshot, while it is still held.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { finished } from 'node:stream/promises';
import { ErrorCode, PgExtractError } from '../errors';
import { runLabel, singleTable } from '../contract/table-selection';
import { parseTableName } from '../contract/identifiers';
import { type DataPackage, dataPackage, dataPackageResource } from '../readers/data-package';
import type { DataPackageFile } from '../contract/extraction-types';
import { sourceColumns } from '../postgres/catalog';
import { readInSnapshot } from '../postgres/partition-copy';
import { closeSession, openSession } from '../postgres/session';
import type { OutputStores } from '../storage/output-stores';
import type { ExtractDeps } from './extract';
import { withFailures } from './failures';
import {
  type DataPackageRequest,
  type SetDataPackageRequest,
  dataPackageRequestSchema,
  parseActivityRequest,
  setDataPackageRequestSchema,
} from '../contract/activity-requests';

/** The package names files by their base name: every file must be in the package's own folder. */
function inPackageFolder(name: string, files: readonly string[]): string[] {
  const folder = posix.dirname(name);
  const outside = files.find((f) => posix.dirname(f) !== folder);
  if (outside) throw new PgExtractError(ErrorCode.INPUT_INVALID, `data package: ${outside} is not in ${folder}`, { field: 'files' });
  return files.map((f) => posix.basename(f));
}

async function storePackage(stores: OutputStores, name: string, pkg: DataPackage): Promise<DataPackageFile> {
  const body = Buffer.from(`${JSON.stringify(pkg, null, 2)}\n`);
  const store = stores.of(name);
  const sink = await store.sink(name);
  const writable = sink.open();
  writable.end(body);
  await finished(writable);
  const written = { bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') };
  const stored = await sink.commit(written);
  return { path: stored.location, name: store.evidenceName(stored.location), etag: stored.etag, ...written };
}

export function createDataPackageActivities({ stores, sourceUrl }: Pick<ExtractDeps, 'stores' | 'sourceUrl'>) {
  return {
    async writeDataPackage(raw: DataPackageRequest): Promise<DataPackageFile> {
      return withFailures(async () => {
        const { input, name, files, columns, primaryKey } = parseActivityRequest(dataPackageRequestSchema, raw);
        const paths = inPackageFolder(name, files);
        const { schema, table } = parseTableName(singleTable(input));
        const resource = dataPackageResource({ schema, table, columns, primaryKey, paths }, input);
        return storePackage(stores, name, dataPackage(resource.name, new Date().toISOString(), [resource]));
      });
    },

    async writeSetDataPackage(raw: SetDataPackageRequest): Promise<DataPackageFile> {
      return withFailures(async () => {
        const req = parseActivityRequest(setDataPackageRequestSchema, raw);
        const client = await openSession(sourceUrl(req.input.source), 'partition');
        try {
          const { result: tables } = await readInSnapshot(
            client,
            {
              snapshotId: req.snapshotId,
              snapshotDigest: req.snapshotDigest,
              source: req.source,
              lockTimeoutMs: req.input.timeouts.lockTimeoutMs,
            },
            (snapshot) => snapshot.resolve(req.tables),
          );
          const resources = tables.map((t, i) =>
            dataPackageResource(
              { schema: t.schema, table: t.table, columns: sourceColumns(t), primaryKey: t.primaryKey, paths: req.tables[i]!.files },
              req.input,
            ),
          );
          return await storePackage(stores, req.name, dataPackage(runLabel(req.input), new Date().toISOString(), resources));
        } finally {
          await closeSession(client);
        }
      });
    },
  };
}

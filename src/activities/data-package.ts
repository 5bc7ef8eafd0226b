/**
 * Writes a run's `datapackage.json` next to its files (same folder or object prefix), through the
 * same store and sink as the files, so it is committed atomically and receipted (bytes, sha256).
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { finished } from 'node:stream/promises';
import { z } from 'zod';
import { ErrorCode, PgExtractError } from '../errors';
import { singleTable } from '../contract/table-selection';
import { parseTableName } from '../contract/identifiers';
import { dataPackage, dataPackageResource } from '../readers/data-package';
import type { DataPackageFile } from '../contract/extraction-types';
import type { SourceColumn } from '../contract/source-column';
import type { OutputStores } from '../storage/output-stores';
import { withFailures } from './failures';
import { type DataPackageRequest, dataPackageRequestSchema, parseActivityRequest } from '../contract/activity-requests';

export function createDataPackageActivities({ stores }: { stores: OutputStores }) {
  return {
    async writeDataPackage(raw: DataPackageRequest): Promise<DataPackageFile> {
      return withFailures(async () => {
        const { input, name, files, columns, primaryKey } = parseActivityRequest(dataPackageRequestSchema, raw);
        const folder = posix.dirname(name);
        const outside = files.find((f) => posix.dirname(f) !== folder);
        if (outside) throw new PgExtractError(ErrorCode.INPUT_INVALID, `data package: ${outside} is not in ${folder}`, { field: 'files' });
        const { schema, table } = parseTableName(singleTable(input));
        const resource = dataPackageResource({ schema, table, columns, primaryKey, paths: files.map((f) => posix.basename(f)) }, input);
        const body = Buffer.from(`${JSON.stringify(dataPackage(resource.name, new Date().toISOString(), [resource]), null, 2)}\n`);
        const store = stores.of(name);
        const sink = await store.sink(name);
        const writable = sink.open();
        writable.end(body);
        await finished(writable);
        const written = { bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') };
        const stored = await sink.commit(written);
        return { path: stored.location, name: store.evidenceName(stored.location), etag: stored.etag, ...written };
      });
    },
  };
}

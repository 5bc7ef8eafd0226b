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
import type { DataPackageFile, SourceColumn } from '../contract/extraction-types';
import type { OutputStores } from '../storage/output-stores';
import { withFailures } from './failures';
import { parseNamed } from './requests';

export interface DataPackageRequest {
  input: unknown;
  /** The package's own name, in the files' folder: `<folder>/datapackage.json`. */
  name: string;
  /** The files' names (relative to the output root, or `s3://` URLs), in partition order. */
  files: string[];
  columns: SourceColumn[];
  primaryKey: string[];
}

const name63 = z.string().min(1).max(63);
const metadataSchema = z.strictObject({
  files: z.array(z.string().min(1).max(4096)).min(1).max(10_000),
  columns: z
    .array(z.strictObject({ name: name63, pgType: z.string().min(1).max(1000), notNull: z.boolean(), enumLabels: z.array(z.string()).nullable() }))
    .min(1),
  primaryKey: z.array(name63),
});

export function createDataPackageActivities({ stores }: { stores: OutputStores }) {
  return {
    async writeDataPackage(raw: DataPackageRequest): Promise<DataPackageFile> {
      return withFailures(async () => {
        const { input, name, files, columns, primaryKey } = parseNamed(raw);
        const parsed = metadataSchema.safeParse({ files, columns, primaryKey });
        if (!parsed.success) throw new PgExtractError(ErrorCode.INPUT_INVALID, `data package: ${parsed.error.issues[0]!.message}`, { field: 'files' });
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

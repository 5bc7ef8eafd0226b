/**
 * A copied file as the manifest lists it: where it is, its receipt (rows, bytes, sha256), and which
 * part of the table it holds, read on which session of which snapshot. Shared by every copy activity.
 */
import type { ManifestFile } from '../contract/extraction-types';
import type { CopiedOutput } from '../storage/output-sink';
import type { OutputStore } from '../storage/output-store';

/** Where a file sits in its table's plan, and who read it. */
export type FilePlace = Pick<ManifestFile, 'partition' | 'batch' | 'range' | 'backendPid' | 'snapshotDigest'>;

export function manifestFileOf(store: Pick<OutputStore, 'evidenceName'>, file: CopiedOutput, place: FilePlace): ManifestFile {
  const { partition, batch, range, backendPid, snapshotDigest } = place;
  return {
    path: file.location,
    name: store.evidenceName(file.location),
    etag: file.etag,
    partition,
    ...(batch === undefined ? {} : { batch }),
    range,
    rows: file.rows,
    bytes: file.bytes,
    sha256: file.sha256,
    backendPid,
    snapshotDigest,
  };
}

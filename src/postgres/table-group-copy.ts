/**
 * A group of small tables' ranges on one session: one snapshot import and identity check and one
 * catalog query for the whole group (see {@link readInSnapshot}), then one COPY per range into its
 * own file, in order.
 * A table of many small ones costs a COPY and a file, not a session, an import and an activity.
 */
import type { Client } from 'pg';
import type { CopiedOutput, OutputSink } from '../storage/output-sink';
import type { ExportFormat } from '../contract/formats';
import type { PartitionRange } from '../contract/partition-range';
import { selectSql, sourceColumns } from './catalog';
import { exportToOutput } from './export-to-output';
import { type PartitionRead, type PlannedTable, type SnapshotImport, readInSnapshot } from './partition-copy';
import { rangePredicate } from './range-predicate';

/** One planned range of a small table. */
export interface GroupRange extends PlannedTable {
  range: PartitionRange;
}

export interface TableGroupOptions {
  format: ExportFormat;
  /** The sink of the i-th range's file, asked for when that range starts. */
  sink: (i: number) => Promise<OutputSink>;
  /** Called once the i-th range's file is committed (its row count is known only after the transaction). */
  onFile?: (i: number) => void;
  onBytes?: (bytes: number) => void;
  signal?: AbortSignal;
}

/**
 * Runs on a fresh session the caller closes. Each file appears under its location only when
 * complete. On failure the files committed so far stay: a retry of the group replaces them, and a
 * failed attempt's discard removes them. Removing them here could remove a later try's files of the
 * same names, when this try outlived its heartbeat timeout and learns of its cancellation only after the retry began.
 */
export async function copyTableGroup(
  client: Client,
  request: SnapshotImport,
  ranges: readonly GroupRange[],
  options: TableGroupOptions,
): Promise<PartitionRead & { files: CopiedOutput[] }> {
  const { result: written, ...read } = await readInSnapshot(client, request, async (snapshot) => {
    const tables = await snapshot.resolve(ranges);
    const outputs = [];
    let before = 0;
    for (const [i, planned] of ranges.entries()) {
      const table = tables[i]!;
      snapshot.reading(planned.table);
      const sink = await options.sink(i);
      const out = await exportToOutput(client, selectSql(table, rangePredicate(planned.range, table.key)), sourceColumns(table), options.format, sink, {
        onBytes: (bytes) => options.onBytes?.(before + bytes),
        signal: options.signal,
      });
      before += out.bytes;
      outputs.push(out);
      options.onFile?.(i);
    }
    return outputs;
  });
  return { files: written.map((w) => ({ location: w.location, etag: w.etag, rows: w.rows, bytes: w.bytes, sha256: w.sha256 })), ...read };
}

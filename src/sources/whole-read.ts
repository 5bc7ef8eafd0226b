/**
 * One read of a whole table through an adapter, for a source whose single-partition export is
 * not a strategy of its own: open (the receipt's window starts), copy the one planned range,
 * close with success. The output's sink is made only once the read is open, so a refused login
 * or a missing table leaves no file; an output whose read cannot complete is discarded.
 */
import type { ExtractionLifecycleReceipt } from '../lifecycle/receipt';
import type { TableRequest } from '../postgres/catalog';
import { type OutputSink, discardAfter } from '../storage/output-sink';
import type { RangeCopy, RangeCopyOptions, SourceAdapter, SourceTable } from './source-adapter';

export interface WholeRead {
  copy: RangeCopy;
  receipt: ExtractionLifecycleReceipt;
  table: SourceTable;
}

export async function readWhole(
  adapter: SourceAdapter,
  request: TableRequest,
  sink: () => Promise<OutputSink>,
  options: RangeCopyOptions & { evidenceName: (location: string) => string },
): Promise<WholeRead> {
  const read = await adapter.open(request, { partitions: 1, lockTimeoutMs: options.lockTimeoutMs, format: options.format.format });
  try {
    const output = await sink();
    const copy = await adapter.copyRange(read.handle, read.plan.ranges[0]!, output, options);
    try {
      const receipt = await read.close('success', [{ name: options.evidenceName(copy.location), rows: copy.rows, bytes: copy.bytes, sha256: copy.sha256 }]);
      return { copy, receipt, table: read.plan.table };
    } catch (err) {
      await discardAfter(err, output, 'output');
      throw err;
    }
  } finally {
    await read.close('abort');
  }
}

/**
 * Our own counters, exported with the Temporal worker's metrics (PG_EXTRACT_METRICS_ADDRESS):
 * rows and bytes written and partitions finished, from the activities that did the work.
 */
import { Context } from '@temporalio/activity';

export function countExtracted(file: { rows: number; bytes: number }, strategy: 'partition' | 'whole_copy'): void {
  const meter = Context.current().metricMeter.withTags({ strategy });
  meter.createCounter('pg_extract_rows', 'rows', 'rows written to extraction files').add(file.rows);
  meter.createCounter('pg_extract_bytes', 'bytes', 'bytes written to extraction files').add(file.bytes);
  meter.createCounter('pg_extract_partitions', 'partitions', 'partitions (files) completed').add(1);
}

/**
 * What a person sees in Temporal Web UI: typed search attributes (table, phase, outcome, rows)
 * and a Markdown "current details" block with partitions done/total. Called on every change.
 */
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { SearchAttributes } from '../shared/definitions';
import type { ExtractionStatus } from '../shared/extraction-types';

export function publishStatus(status: ExtractionStatus): void {
  upsertSearchAttributes([
    { key: SearchAttributes.table, value: status.table },
    { key: SearchAttributes.phase, value: status.phase },
    { key: SearchAttributes.rows, value: status.rows },
    ...(status.outcome ? [{ key: SearchAttributes.outcome, value: status.outcome }] : []),
  ]);
  setCurrentDetails(
    [
      `**${status.table}** — phase \`${status.phase}\``,
      '',
      `| partitions | rows | bytes | attempt | outcome |`,
      `|---|---|---|---|---|`,
      `| ${status.partitionsDone}/${status.partitionsTotal} | ${status.rows} | ${status.bytes} | ${status.attempt} | ${status.outcome ?? '—'} |`,
    ].join('\n'),
  );
}

/**
 * What a person sees in Temporal Web UI: typed search attributes (table, phase, outcome, rows)
 * and a Markdown "current details" block with partitions done/total. Called on every change.
 */
import { metricMeter, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { SearchAttributes } from '../contract/definitions';
import type { AttemptRecord, ExtractionStatus } from '../contract/extraction-types';
import type { TerminalOutcome } from '../lifecycle/terminal';

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

/** Counts one terminal outcome (replay-safe: the SDK drops metrics emitted during replay). */
export function countOutcome(outcome: TerminalOutcome): void {
  metricMeter.createCounter('pg_extract_outcomes', 'runs', 'terminal outcomes recorded').add(1, { outcome });
}

/** Counts one extraction attempt by how it ended. */
export function countAttempt(attempt: AttemptRecord): void {
  metricMeter.createCounter('pg_extract_attempts', 'attempts', 'snapshot attempts by result').add(1, { result: attempt.result });
}

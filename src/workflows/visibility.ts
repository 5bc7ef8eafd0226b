/**
 * What a person sees in Temporal Web UI: typed search attributes (table, phase, outcome, rows)
 * and a Markdown "current details" table, one measure a row (tables and partitions done/total,
 * rows, bytes in human units). Called on every change.
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
  // One row per measure: a wide table's headers run together when the UI lays it out as text.
  const rows: [string, string][] = [
    ...(status.tablesTotal === undefined ? [] : [['tables', `${status.tablesDone ?? 0}/${status.tablesTotal}`] as [string, string]]),
    ['partitions', `${status.partitionsDone}/${status.partitionsTotal}`],
    ['rows', grouped(status.rows)],
    ['bytes', humanBytes(status.bytes)],
    ['attempt', String(status.attempt)],
    ['outcome', status.outcome ?? '—'],
  ];
  showDetails(`**${status.table}** — phase \`${status.phase}\``, rows);
}

/** Web UI's current details: a title and a two-column table, one measure a row (state only: no command). */
export function showDetails(title: string, rows: [string, string][]): void {
  setCurrentDetails([title, '', '| measure | value |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n'));
}

/** 1234567 → `1,234,567`. */
export function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Bytes in decimal units a person reads at a glance: `999 B`, `1.5 kB`, `12.3 MB`, `4.0 GB`. */
export function humanBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** Counts one terminal outcome (replay-safe: the SDK drops metrics emitted during replay). */
export function countOutcome(outcome: TerminalOutcome): void {
  metricMeter.createCounter('pg_extract_outcomes', 'runs', 'terminal outcomes recorded').add(1, { outcome });
}

/** Counts one extraction attempt by how it ended. */
export function countAttempt(attempt: AttemptRecord): void {
  metricMeter.createCounter('pg_extract_attempts', 'attempts', 'snapshot attempts by result').add(1, { result: attempt.result });
}

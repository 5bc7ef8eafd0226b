/** Human and JSON renderings of manifests, receipts and status. */
import type { ArtifactTerminalReceipt } from '../lifecycle/terminal';
import type { Manifest } from '../contract/extraction-types';
import type { RunStatus } from '../client';
import { parseTableName } from '../contract/identifiers';
import { joinedName } from '../contract/target-mapping';
import { loadedWithoutFiles } from '../contract/run-outputs';

/**
 * The table a file holds, as a manifest of several tables names it (catalog names joined by a dot):
 * a one-table run's files name none, and its manifest names the table as it was given (`T`, `"S".t`).
 */
function tableOf(file: { table?: string | undefined }, m: Manifest): string {
  return file.table ?? joinedName(parseTableName(m.table));
}

/** The `start --wait --json` document of run `runId`. Field names are a stable interface. */
export function manifestJson(m: Manifest, runId: string) {
  const tables = tableTotals(m);
  return {
    workflowId: m.workflowId,
    runId,
    extractionReceipt: m.extractionReceipt,
    // An object on S3 also gives its ETag; a local file has none to give.
    files: m.files.map(({ table, path, partition, batch, range, rows, bytes, sha256, etag }) => ({
      table: tableOf({ table }, m),
      path,
      partition,
      ...(batch !== undefined ? { batch } : {}),
      range,
      rows,
      bytes,
      sha256,
      ...(etag ? { etag } : {}),
    })),
    tables,
    totals: { ...m.totals, tables: tables.length, files: m.files.length },
    dataPackage: m.dataPackage ? { path: m.dataPackage.path, bytes: m.dataPackage.bytes, sha256: m.dataPackage.sha256 } : null,
  };
}

/**
 * Each table's rows, bytes and file count, in the manifest's order (a run of several tables lists
 * the biggest first). A load that writes no files (`--via stream`, `--via internal`) lists its one
 * table with the rows it moved.
 */
function tableTotals(m: Manifest): { table: string; rows: number; bytes: number; files: number }[] {
  if (loadedWithoutFiles(m)) return [{ table: tableOf({}, m), ...m.totals, files: 0 }];
  const byTable = new Map<string, { table: string; rows: number; bytes: number; files: number }>();
  for (const f of m.files) {
    const table = tableOf(f, m);
    const t = byTable.get(table) ?? { table, rows: 0, bytes: 0, files: 0 };
    byTable.set(table, { table, rows: t.rows + f.rows, bytes: t.bytes + f.bytes, files: t.files + 1 });
  }
  return [...byTable.values()];
}

/** `then` says what happens next: the target commit awaited, or the built-in load's outcome. */
export function printManifest(m: Manifest, then: string): void {
  const r = m.extractionReceipt;
  console.log(`${m.workflowId}: ${m.table} extracted (${m.strategy}, attempt ${m.attempt})`);
  if (r) {
    console.log(`  window   ${r.extractionStartedAt} → ${r.extractionCompletedAt} (${r.clockAuthority})`);
    console.log(`  snapshot ${r.snapshotAuthority ?? 'none claimed'} ${r.sourceToken ?? ''}`);
  } else {
    console.log('  window   not observed by this run (the commit fence answered a retried load)');
  }
  for (const f of m.files)
    console.log(
      `  ${f.table ? `${f.table} ` : ''}part ${String(f.partition).padStart(4)}  ${String(f.rows).padStart(10)} rows  ${String(f.bytes).padStart(12)} B  ${f.sha256.slice(0, 12)}…  ${f.path}`,
    );
  if (m.dataPackage) {
    const tables = tableTotals(m);
    const pick = tables.length > 1 ? ` --table ${tables[0]!.table}` : '';
    console.log(`  package ${m.dataPackage.path} (types and CSV dialect; pg-extract reader ${m.workflowId} --engine duckdb${pick})`);
  }
  console.log(`  total ${m.totals.rows} rows, ${m.totals.bytes} bytes; ${then}`);
}

export function printReceipt(r: ArtifactTerminalReceipt): void {
  console.log(`outcome ${r.outcome} at ${r.decidedAt}`);
  console.log(`  cleanup ${r.cleanupAttempted ? (r.cleanupSucceeded ? 'succeeded' : `FAILED (${r.cleanupErrorCode})`) : 'not attempted (evidence retained)'}`);
  console.log(`  deleted ${r.filesDeleted.length} file(s), retained ${r.filesRetained.length}`);
  for (const f of r.filesRetained) console.log(`  retained ${f}`);
}

export function printStatus(workflowId: string, s: RunStatus): void {
  // A count a closed run's status query could not give (no worker answered) is not known: shown as such, not as 0.
  const count = (n: number | null): string => (n === null ? '? (no worker answered)' : String(n));
  const rows: [string, string][] = [
    ['workflow', `${workflowId} (${s.workflowStatus})`],
    ['table', s.table],
    ['phase', s.phase],
    ['attempt', count(s.attempt)],
    ...(s.tablesTotal === undefined ? [] : [['tables', `${s.tablesDone ?? 0}/${s.tablesTotal}`] as [string, string]]),
    ['partitions', s.partitionsDone === null || s.partitionsTotal === null ? count(null) : `${s.partitionsDone}/${s.partitionsTotal}`],
    ['rows', String(s.rows)],
    ['bytes', count(s.bytes)],
    ['outcome', s.outcome ?? '—'],
    ...(s.failure ? [['failure', `${s.failure.code}: ${s.failure.message}`] as [string, string]] : []),
  ];
  for (const [k, v] of rows) console.log(`${k.padEnd(11)} ${v}`);
}

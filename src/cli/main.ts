#!/usr/bin/env node
/**
 * `pg-extract`: run a worker (or write its workflow bundle), start an extraction, report the
 * target commit, read status, cancel. JSON output (`--json`) is a stable interface for other tools.
 */
import { Client, Connection } from '@temporalio/client';
import { Command, InvalidArgumentError } from 'commander';
import { checkRunId, checkWorkflowId, extractionStatus, reportCommit, startExtraction, waitForManifest } from '../client';
import { connectionConfig, outputFileMode, outputRoot } from '../config';
import { ErrorCode, PgExtractError } from '../errors';
import type { ExtractionResult } from '../contract/extraction-types';
import { confinedPath } from '../storage/output-root';
import { OutputStores } from '../storage/output-stores';
import { isS3Url } from '../contract/s3-url';
import { parseTableName, splitNameList } from '../contract/identifiers';
import { parseCommitReport } from '../contract/commit-report';
import { type ExtractionRequest, parseNewRunInput } from '../contract/extraction-input';
import { DEFAULT_ROW_GROUP_ROWS } from '../contract/format-options';
import { runWorkerFromEnv } from '../worker/worker';
import { writeWorkflowBundle } from '../worker/workflow-bundle';
import { printError, printFailure } from './errors';
import { followProgress } from './progress';
import { parseEngine, readerStatement } from './reader';
import { manifestJson, printManifest, printReceipt, printStatus } from './output';

interface GlobalOptions {
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

async function withClient<T>(globals: GlobalOptions, work: (client: Client, taskQueue: string) => Promise<T>): Promise<T> {
  const config = connectionConfig();
  const connection = await Connection.connect({ address: globals.address ?? config.temporalAddress, connectTimeout: '5 seconds' });
  try {
    return await work(new Client({ connection, namespace: globals.namespace ?? config.namespace }), globals.taskQueue ?? config.taskQueue);
  } finally {
    await connection.close();
  }
}

function partitionsArg(value: string): number | 'auto' {
  if (value === 'auto') return 'auto';
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError('a positive integer or "auto"');
  return n;
}

function countArg(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n)) throw new InvalidArgumentError('a positive integer');
  return n;
}

function listArg(value: string): string[] {
  return splitNameList(value);
}

function repeatArg(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function secondsArg(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('a positive number of seconds');
  return Math.round(n * 1000);
}

/** The options the user gave, without those left unset (the input schema's defaults stand in for them). */
function given<T extends Record<string, unknown>>(options: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

/** Where --target loads: --target-schema maps a set; one table defaults to the source table's name. */
function targetTables(opts: { table?: string; targetTable?: string; targetSchema?: string }): { table?: string; schema?: string } {
  return given({ table: opts.targetTable ?? opts.table, schema: opts.targetSchema });
}

const program = new Command('pg-extract')
  .description('Durable PostgreSQL extraction on Temporal')
  .option('--address <host:port>', 'Temporal frontend (TEMPORAL_ADDRESS, default localhost:7233)')
  .option('--namespace <ns>', 'Temporal namespace (TEMPORAL_NAMESPACE, default default)')
  .option('--task-queue <name>', 'task queue (PG_EXTRACT_TASK_QUEUE, default pg-extract)')
  // Bad arguments are bad input like any other: `error INPUT_INVALID: …`, exit 2 (./errors.ts), not commander's own line and exit 1.
  .exitOverride()
  .configureOutput({ outputError: () => undefined });

program
  .command('worker')
  .description('run a worker (reads PG_EXTRACT_SOURCE_URL, PG_EXTRACT_SOURCE_<NAME>_URL, PG_EXTRACT_OUT_DIR)')
  .action(async () => {
    const globals = program.opts<GlobalOptions>();
    const env = { ...process.env };
    if (globals.address) env.TEMPORAL_ADDRESS = globals.address;
    if (globals.namespace) env.TEMPORAL_NAMESPACE = globals.namespace;
    if (globals.taskQueue) env.PG_EXTRACT_TASK_QUEUE = globals.taskQueue;
    await runWorkerFromEnv(env);
  });

program
  .command('bundle-workflows')
  .description("write the worker's workflow bundle to a file, for PG_EXTRACT_WORKFLOW_BUNDLE (a worker without one bundles at start)")
  .requiredOption('--out <file>', 'the file to write')
  .action(async (opts: { out: string }) => {
    await writeWorkflowBundle(opts.out);
    console.log(`wrote ${opts.out}`);
  });

program
  .command('start')
  .description('start an extraction workflow')
  .option('--table <schema.table>', 'table to export (or --tables, or --schema)')
  .option('--tables <s.a,s.b>', 'several tables (views too) exported at one snapshot', listArg, undefined)
  .option('--schema <name>', 'every ordinary and partitioned table of a schema, at one snapshot')
  .option('--include <glob>', 'with --schema: only tables whose name matches (* and ?; repeatable)', repeatArg, undefined)
  .option('--exclude <glob>', 'with --schema: skip tables whose name matches (repeatable)', repeatArg, undefined)
  .option('--max-in-flight <N>', 'with --tables/--schema: partitions copied at once over the whole run (default 8)', Number)
  .option('--source <name>', 'source configured on the worker (PG_EXTRACT_SOURCE_<NAME>_URL: postgres://… or mysql://…)', 'default')
  .option('--key <column>', 'split key (default: a single-column primary key or unique index; else ctid page ranges)')
  .option('--columns <a,b,c>', 'columns to export (default: all)')
  .option('--partitions <N|auto>', 'partition count', partitionsArg, 'auto')
  .option('--format <csv|binary|parquet>', 'file format', 'csv')
  .option('--no-header', 'omit the CSV header line')
  .option('--gzip', 'gzip the files (csv, binary): the same as --compression gzip')
  .option(
    '--compression <zstd|gzip|snappy|none>',
    'csv, binary: compress each file whole, zstd|gzip|none (default none); parquet: its columns, zstd|snappy|none (default zstd)',
  )
  .option('--row-group-rows <N>', `rows per Parquet row group (default ${DEFAULT_ROW_GROUP_ROWS})`, countArg)
  .option('--max-file-bytes <size>', 'batched files: each partition writes a sequence of files of at most this size as stored (e.g. 256MB, 1GiB)')
  .option('--max-file-rows <N>', 'batched files: at most N rows per file', Number)
  .option(
    '--out <dir|s3://bucket/prefix>',
    "parent of the run's folder: under the worker output root (PG_EXTRACT_OUT_DIR), or in a bucket (the worker's AWS_* settings)",
  )
  .option('--target <name>', 'load into this PostgreSQL target (PG_EXTRACT_TARGET_<NAME>_URL on the worker)')
  .option('--target-table <schema.table>', 'target table for --target')
  .option('--target-schema <schema>', 'with --tables/--schema and --target: load each table into the table of its name in this schema (one transaction)')
  .option('--mode <append|replace>', 'how --target loads', 'append')
  .option(
    '--via <files|internal|stream>',
    'how --target gets the rows: files (extract, then COPY them in), internal (source and target are one database: one INSERT … SELECT, no files) or stream (each partition COPYs straight into the target, no files)',
  )
  .option('--commit-deadline <seconds>', 'wait this long for the target commit before retaining the files', secondsArg)
  .option('--workflow-id <id>', 'workflow id (default derived from the table and time)')
  .option('--wait', 'wait until extraction is complete (with --target, until the load has ended) and print the manifest')
  .option('--json', 'print JSON')
  .action(async (opts, command: Command) => {
    const request: ExtractionRequest = {
      source: opts.source,
      partitions: opts.partitions,
      format: opts.format,
      header: opts.header,
      gzip: Boolean(opts.gzip),
      ...given({
        table: opts.table,
        tables: opts.tables,
        schema: opts.schema,
        include: opts.include,
        exclude: opts.exclude,
        maxInFlight: opts.maxInFlight,
        key: opts.key,
        columns: opts.columns === undefined ? undefined : splitNameList(String(opts.columns)),
        compression: opts.compression,
        rowGroupRows: opts.rowGroupRows,
        maxFileBytes: opts.maxFileBytes,
        maxFileRows: opts.maxFileRows,
        outDir: opts.out,
        commitDeadlineMs: opts.commitDeadline,
        target: opts.target === undefined ? undefined : { name: opts.target, ...targetTables(opts), mode: opts.mode, ...given({ via: opts.via }) },
      }),
    };
    if (opts.target === undefined) {
      const targetOnly = [
        ['--via', 'target.via', opts.via !== undefined],
        ['--target-schema', 'target.schema', opts.targetSchema !== undefined],
        ['--target-table', 'target.table', opts.targetTable !== undefined],
        ['--mode', 'target.mode', command.getOptionValueSource('mode') === 'cli'],
      ] as const;
      const [flag, field] = targetOnly.find(([, , set]) => set) ?? [];
      if (flag) throw new PgExtractError(ErrorCode.INPUT_INVALID, `${flag} needs --target`, { field });
    }
    checkWorkflowId(opts.workflowId);
    // Validate before connecting: bad input has no side effect, not even a connection.
    const input = parseNewRunInput(request);
    // An absolute --out is checked here only against an output root this shell names: the worker's may be elsewhere
    // (it checks again when it prepares the folder).
    if (input.outDir !== undefined && !isS3Url(input.outDir) && process.env.PG_EXTRACT_OUT_DIR) confinedPath(outputRoot(), input.outDir);
    await withClient(program.opts<GlobalOptions>(), async (client, taskQueue) => {
      const handle = await startExtraction(client, input, { taskQueue, workflowId: opts.workflowId });
      if (!opts.wait) {
        console.log(opts.json ? JSON.stringify({ workflowId: handle.workflowId, runId: handle.firstExecutionRunId }) : `started ${handle.workflowId}`);
        return;
      }
      const manifest = opts.json ? await waitForManifest(handle) : await followProgress(handle, process.stderr);
      if (!input.target) {
        // The files wait for their target owner, who reports the commit (`pg-extract commit`).
        if (opts.json) console.log(JSON.stringify(manifestJson(manifest, handle.firstExecutionRunId)));
        else
          printManifest(manifest, `awaiting the target commit (pg-extract commit ${manifest.workflowId} --run-id ${handle.firstExecutionRunId} --outcome …)`);
        return;
      }
      // The built-in loader is the target owner: the run ends with its load, so that is what --wait waits for.
      process.stderr.write(`extracted; loading into ${input.target.name}…\n`);
      const result = (await handle.result()) as ExtractionResult;
      if (opts.json)
        console.log(JSON.stringify({ ...manifestJson(manifest, handle.firstExecutionRunId), load: result.load, terminalReceipt: result.terminalReceipt }));
      else {
        printManifest(manifest, `loaded into ${input.target.name}: ${result.load?.outcome ?? 'no load'}`);
        printReceipt(result.terminalReceipt);
      }
      if (result.terminalReceipt.outcome !== 'success') {
        // `unknown`: the COMMIT's answer was lost, so the load may have committed; the files are kept as evidence.
        const what = result.load?.outcome === 'unknown' ? 'may or may not have committed' : 'did not commit';
        process.exitCode = printFailure(
          result.load?.reason ?? ErrorCode.WORKFLOW_FAILED,
          `the load into ${input.target.name} ${what} (${result.load?.outcome ?? 'no load'}${result.load?.message ? `: ${result.load.message}` : ''}); the run ended ${result.terminalReceipt.outcome}`,
        );
      }
    });
  });

program
  .command('commit <workflowId>')
  .description("report the target owner's commit and print the terminal receipt")
  .requiredOption('--outcome <committed|failed|unknown>', 'what happened to the target commit')
  .option('--operation-id <id>', "the target owner's id for the load (makes repeated reports idempotent)")
  .option('--run-id <id>', "the run the files are of (start --json's runId): without it, the workflow id's latest run")
  .option('--json', 'print JSON')
  .action(async (workflowId: string, opts) => {
    // Validate before connecting: a bad report has no side effect, not even a connection.
    const report = parseCommitReport({ outcome: opts.outcome, ...(opts.operationId ? { operationId: opts.operationId } : {}) });
    checkRunId(opts.runId);
    await withClient(program.opts<GlobalOptions>(), async (client) => {
      const receipt = await reportCommit(client, workflowId, report, opts.runId);
      if (opts.json) console.log(JSON.stringify(receipt));
      else printReceipt(receipt);
    });
  });

program
  .command('status <workflowId>')
  .description('phase and progress of a run')
  .option('--json', 'print JSON')
  .action(async (workflowId: string, opts) => {
    await withClient(program.opts<GlobalOptions>(), async (client) => {
      const status = await extractionStatus(client, workflowId);
      if (opts.json) console.log(JSON.stringify(status));
      else printStatus(workflowId, status);
    });
  });

program
  .command('reader <workflowId>')
  .description("print one statement that reads a run's files with exact types (the run's data package)")
  .requiredOption('--engine <duckdb>', 'the engine that runs the statement')
  .option('--table <schema.table>', 'the table to read, when the run has several')
  .action(async (workflowId: string, opts) => {
    // Validate before connecting: bad input has no side effect, not even a connection.
    parseEngine(opts.engine);
    const table = opts.table === undefined ? undefined : parseTableName(opts.table, 'table');
    const root = outputRoot();
    const stores = new OutputStores({ outputRoot: root, fileMode: outputFileMode() });
    await withClient(program.opts<GlobalOptions>(), async (client) => {
      console.log(await readerStatement(client, stores, root, workflowId, table));
    });
  });

program
  .command('cancel <workflowId>')
  .description('cancel a run: sessions closed, files deleted (abort)')
  // As for commit: a workflow id is free again once its run has closed, and a cancel deletes the files of the run it reaches.
  .option('--run-id <id>', "the run to cancel (start --json's runId): without it, the workflow id's latest run")
  .action(async (workflowId: string, opts: { runId?: string }) => {
    checkRunId(opts.runId);
    await withClient(program.opts<GlobalOptions>(), async (client) => {
      const handle = client.workflow.getHandle(workflowId, opts.runId);
      // The server takes a cancel of a closed run without a word: saying "requested" then would be untrue.
      const { status } = await handle.describe();
      if (status.name !== 'RUNNING') {
        throw new PgExtractError(
          ErrorCode.INPUT_INVALID,
          `${workflowId}${opts.runId ? ` run ${opts.runId}` : ''} has closed (${status.name}): nothing to cancel`,
          {
            field: 'workflowId',
          },
        );
      }
      await handle.cancel();
      console.log(`cancel requested for ${workflowId}${opts.runId ? ` run ${opts.runId}` : ''}`);
    });
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  process.exitCode = printError(err);
});

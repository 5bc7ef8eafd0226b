/**
 * The worker: a main Worker on the shared task queue (workflows, extraction and cleanup
 * activities) and a holder Worker on a queue of its own (the snapshot holder activities, which
 * must run in the process whose session holds the snapshot). Scale out by running more of these.
 * Graceful shutdown on SIGINT/SIGTERM comes from the Temporal Runtime.
 */
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, type WorkerOptions, makeTelemetryFilterString } from '@temporalio/worker';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Duration } from '@temporalio/common';
import { SnapshotHolderRegistry, createActivities, createHolderActivities } from '../activities';
import { checkFileMode, connectionConfig, maxConcurrentActivities, outputDirectIo, outputFileMode, outputRoot, sourceUrl, targetUrl } from '../config';
import { redactUrl } from '../redact';
import { PinoTemporalLogger, coreLogLevel, createLogger } from './logging';
import { configuredUrlProblems } from './configured-urls';
import { DEFAULT_FILE_MODE } from '../storage/output-root';
import { ensureSearchAttributes } from './search-attributes';
import { OutputStores } from '../storage/output-stores';
import { describeWorkerRuntimeSettings, hasWorkerRuntimeSettings, sizeThreadPool, threadPoolSizeFor } from './runtime';
import { sweepOrphanedScratch } from '../parquet/scratch';
import { PAYLOAD_CONVERTER_PATH, withWorkflowBundleFile } from './workflow-bundle';

/** Options for {@link createExtractionWorker}. */
export interface ExtractionWorkerOptions {
  connection: NativeConnection;
  /** @default 'default' */
  namespace?: string;
  taskQueue: string;
  /** Every output file stays inside this folder. */
  outputRoot: string;
  /**
   * Mode of output files, whatever the umask; folders get the matching mode (0600 → 0700).
   * `pg-extract worker` reads PG_EXTRACT_FILE_MODE.
   * @default 0o600
   */
  fileMode?: number;
  /**
   * Whether local output files are written with O_DIRECT, past the page cache, where the file system
   * allows it (else, and when false, through the page cache). `pg-extract worker` reads
   * PG_EXTRACT_DIRECT_IO (`on` or `off`).
   * @default true
   */
  directIo?: boolean;
  /** Resolves a source name to its URL; only the worker ever sees URLs. */
  sourceUrl: (name: string) => string;
  /** The S3 client for `s3://` outputs. @default one from the worker's AWS_* environment, made on first use */
  s3Client?: () => S3Client;
  /** Resolves a target name (built-in loader) to its URL. @default none configured */
  targetUrl?: (name: string) => string;
  /**
   * A pre-built workflow bundle (`{ code }` or `{ codePath }`, e.g. from `pg-extract bundle-workflows`);
   * else ./workflows is bundled at start-up in a child process (./workflow-bundle.ts), which takes seconds.
   * `pg-extract worker` reads PG_EXTRACT_WORKFLOW_BUNDLE (a path).
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /**
   * Concurrent activities per worker: each partition holds one PostgreSQL session. A process that
   * raises it should raise libuv's pool with it (`sizeThreadPool` in ./runtime.ts; `pg-extract worker` does).
   * @default 8
   */
  maxConcurrentActivities?: number;
  /** How long a stopping worker waits for its cancelled activities before its run ends with an error. @default {@link SHUTDOWN_FORCE_TIME} */
  shutdownForceTime?: Duration;
}

const DEFAULT_CONCURRENT_ACTIVITIES = 8;

/**
 * Activities at once on a worker's holder queue. A snapshot's hold takes one for its whole attempt,
 * and the attempt's plan wait, completion and release each need one beside it: once holds filled
 * them all (64, the old size, at 64 runs' attempts on one worker), those calls timed out and every
 * attempt lost its snapshot. A hold is one idle session, so this leaves room for 512 at once.
 */
const HOLDER_ACTIVITIES = 1024;

export interface ExtractionWorker {
  readonly holderTaskQueue: string;
  readonly main: Worker;
  readonly holder: Worker;
  /** Runs both until shutdown; if one stops, the other is shut down too. */
  run(): Promise<void>;
  shutdown(): void;
}

/** How long a stopping worker waits for its cancelled activities to end (under Docker's and Kubernetes' 30 s stop grace). */
const SHUTDOWN_FORCE_TIME: Duration = '25 seconds';

export async function createExtractionWorker(options: ExtractionWorkerOptions): Promise<ExtractionWorker> {
  const holderTaskQueue = `${options.taskQueue}/holder/${randomUUID()}`;
  const common = {
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    dataConverter: { payloadConverterPath: PAYLOAD_CONVERTER_PATH },
    // Running activities are cancelled at once on shutdown; one that does not end (a statement waiting on a lock, a
    // file call that hangs) ends the worker's run with an error after this, instead of holding its stop for ever (the
    // process's exit closes its sessions; each run's activity is retried elsewhere).
    shutdownForceTime: options.shutdownForceTime ?? SHUTDOWN_FORCE_TIME,
  };
  const stores = new OutputStores({
    outputRoot: options.outputRoot,
    fileMode: checkFileMode(options.fileMode ?? DEFAULT_FILE_MODE, 'fileMode'),
    directIo: options.directIo ?? true,
    ...(options.s3Client ? { s3Client: options.s3Client } : {}),
  });
  const createMain = (workflowBundle: NonNullable<WorkerOptions['workflowBundle']>) =>
    Worker.create({
      ...common,
      taskQueue: options.taskQueue,
      workflowBundle,
      activities: createActivities({
        stores,
        sourceUrl: options.sourceUrl,
        targetUrl: options.targetUrl ?? ((name) => targetUrl(name, {})),
        holderTaskQueue,
      }),
      maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities ?? DEFAULT_CONCURRENT_ACTIVITIES,
      // A crashed worker's cached workflows move to another worker after this, not the 10 s default.
      stickyQueueScheduleToStartTimeout: '3 seconds',
    });
  const main = options.workflowBundle ? await createMain(options.workflowBundle) : await withWorkflowBundleFile((codePath) => createMain({ codePath }));
  const holder = await Worker.create({
    ...common,
    taskQueue: holderTaskQueue,
    activities: createHolderActivities({ registry: new SnapshotHolderRegistry(), sourceUrl: options.sourceUrl, stores }),
    maxConcurrentActivityTaskExecutions: HOLDER_ACTIVITIES,
  });
  const stopBoth = (): void => {
    for (const w of [main, holder]) if (w.getState() === 'RUNNING') w.shutdown();
  };
  return {
    holderTaskQueue,
    main,
    holder,
    async run() {
      await Promise.all([main.run().finally(stopBoth), holder.run().finally(stopBoth)]);
    },
    shutdown: stopBoth,
  };
}

/**
 * `pg-extract worker` / `npm run worker`: configuration from the environment. Logs are pino JSON
 * on stderr; PG_EXTRACT_METRICS_ADDRESS (e.g. 127.0.0.1:9464) serves Prometheus metrics.
 */
export async function runWorkerFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const concurrency = env.PG_EXTRACT_MAX_CONCURRENT_ACTIVITIES
    ? maxConcurrentActivities(env.PG_EXTRACT_MAX_CONCURRENT_ACTIVITIES)
    : DEFAULT_CONCURRENT_ACTIVITIES;
  // First, before this process does any I/O: libuv sizes its pool when the pool first runs.
  const threadPool = sizeThreadPool(concurrency);
  const config = connectionConfig(env);
  const root = outputRoot(env);
  const fileMode = outputFileMode(env);
  const directIo = outputDirectIo(env);
  const logger = createLogger(env);
  // Logged, not fatal: the runs that name another source or target go on; those that name this one fail with its code.
  for (const { variable, problem } of configuredUrlProblems(env)) logger.error({ variable }, `${variable} cannot be used: ${problem}`);
  const metrics = env.PG_EXTRACT_METRICS_ADDRESS;
  Runtime.install({
    logger: new PinoTemporalLogger(logger),
    telemetryOptions: {
      // Core's own lines (its gRPC retries, say) go through the same pino logger, redacted, not as text on stderr.
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: coreLogLevel(logger.level) }) },
      ...(metrics ? { metrics: { prometheus: { bindAddress: metrics } } } : {}),
    },
  });
  const client = await Connection.connect({ address: config.temporalAddress });
  try {
    const added = await ensureSearchAttributes(client, config.namespace);
    if (added.length) logger.info({ added }, 'registered search attributes');
  } finally {
    await client.close();
  }
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  try {
    if (!env.PG_EXTRACT_WORKFLOW_BUNDLE) {
      logger.info('bundling the workflows in a child process (no PG_EXTRACT_WORKFLOW_BUNDLE; `pg-extract bundle-workflows --out FILE` makes one)');
    }
    const worker = await createExtractionWorker({
      connection,
      namespace: config.namespace,
      taskQueue: config.taskQueue,
      outputRoot: root,
      fileMode,
      directIo,
      sourceUrl: (name) => sourceUrl(name, env),
      targetUrl: (name) => targetUrl(name, env),
      ...(env.PG_EXTRACT_WORKFLOW_BUNDLE ? { workflowBundle: { codePath: env.PG_EXTRACT_WORKFLOW_BUNDLE } } : {}),
      maxConcurrentActivities: concurrency,
    });
    const swept = await sweepOrphanedScratch();
    if (swept.removed.length) logger.info({ removed: swept.removed }, 'removed the scratch folders of workers that are gone');
    if (swept.failed.length) logger.warn({ failed: swept.failed }, 'could not remove the scratch folders of workers that are gone');
    if (!hasWorkerRuntimeSettings()) {
      logger.warn(`started without the worker's memory settings; start it with ${describeWorkerRuntimeSettings()} for a lower peak RSS`);
    }
    if (threadPool.tooSmall) {
      logger.warn(
        `UV_THREADPOOL_SIZE=${threadPool.size} is under the ${threadPoolSizeFor(concurrency)} threads ${concurrency} concurrent activities want: a Parquet conversion holds a thread for its whole partition, and connects wait behind them`,
      );
    }
    logger.info(
      {
        address: config.temporalAddress,
        namespace: config.namespace,
        taskQueue: config.taskQueue,
        outputRoot: root,
        metrics: metrics ?? null,
        maxConcurrentActivities: concurrency,
        threadPoolSize: threadPool.size,
      },
      `pg-extract worker on ${config.temporalAddress} queue ${config.taskQueue}`,
    );
    await worker.run();
  } finally {
    await connection.close();
  }
}

if (require.main === module) {
  runWorkerFromEnv().catch((err) => {
    console.error(redactUrl(String((err as Error)?.stack ?? err)));
    process.exit(1);
  });
}

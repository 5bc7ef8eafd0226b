/** Runs an extraction worker (main + holder queue) on the live Temporal server for one test. */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { startExtraction } from '../../src/client';
import type { ExtractionRequest } from '../../src/contract/extraction-input';
import type { ExtractionResult } from '../../src/contract/extraction-types';
import { ErrorCode, PgExtractError } from '../../src/errors';
import { s3ClientFromEnv } from '../../src/storage/s3-client';
import { type ExtractionWorker, createExtractionWorker } from '../../src/worker/worker';
import { live } from './services';

export interface WorkerContext {
  client: Client;
  taskQueue: string;
  worker: ExtractionWorker;
}

export interface TestWorkerOptions {
  taskQueue?: string;
  /** Source URL for the `default` source. @default the live PostgreSQL */
  sourceUrl?: string;
  maxConcurrentActivities?: number;
  /** Target name → URL for the built-in loader. */
  targets?: Record<string, string>;
  /** Mode of written files. @default the worker's (0600) */
  fileMode?: number;
  /** The worker's output root. @default the run's shared root */
  outputRoot?: string;
  /** AWS_* settings of the worker's S3 client (e.g. the test S3 server's). */
  s3Env?: Record<string, string>;
  /** How long a stopping worker waits for its cancelled activities. @default the worker's (25 s) */
  shutdownForceTime?: Duration;
}

export async function startTestWorker(options: TestWorkerOptions = {}): Promise<{ worker: ExtractionWorker; running: Promise<void>; taskQueue: string }> {
  const { temporal, bundle, pg, outRoot } = live();
  const taskQueue = options.taskQueue ?? `test-${randomUUID()}`;
  const url = options.sourceUrl ?? pg.url;
  const worker = await createExtractionWorker({
    connection: temporal.nativeConnection,
    taskQueue,
    outputRoot: options.outputRoot ?? outRoot,
    workflowBundle: bundle,
    ...(options.s3Env ? { s3Client: () => s3ClientFromEnv(options.s3Env) } : {}),
    maxConcurrentActivities: options.maxConcurrentActivities,
    fileMode: options.fileMode,
    ...(options.shutdownForceTime ? { shutdownForceTime: options.shutdownForceTime } : {}),
    targetUrl: (name) => {
      const target = options.targets?.[name];
      if (!target) throw new PgExtractError(ErrorCode.SOURCE_UNKNOWN, `target ${name} is not configured`, { field: 'target' });
      return target;
    },
    sourceUrl: (name) => {
      if (name !== 'default') throw new PgExtractError(ErrorCode.SOURCE_UNKNOWN, `source ${name} is not configured`, { field: 'source' });
      return url;
    },
  });
  return { worker, running: worker.run(), taskQueue };
}

export async function withWorker<T>(work: (ctx: WorkerContext) => Promise<T>, options: TestWorkerOptions = {}): Promise<T> {
  const { worker, running, taskQueue } = await startTestWorker(options);
  try {
    return await work({ client: live().temporal.client, taskQueue, worker });
  } finally {
    worker.shutdown();
    await running;
  }
}

/** Runs `request` on a worker of its own (`options`) to its result; `onEnd` is given the run's handle once it has ended. */
export async function runToResult(
  request: Omit<ExtractionRequest, 'source'>,
  options: TestWorkerOptions,
  onEnd?: (handle: WorkflowHandle) => Promise<void>,
): Promise<ExtractionResult> {
  return withWorker(async ({ taskQueue }) => {
    const handle = await startExtraction(live().temporal.client, request, { taskQueue });
    const result = (await handle.result()) as ExtractionResult;
    await onEnd?.(handle);
    return result;
  }, options);
}

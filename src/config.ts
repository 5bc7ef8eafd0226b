/**
 * Worker and client configuration from the environment. Source and target URLs are read by the
 * worker only; workflows carry source *names*, so no credential reaches workflow history.
 */
import { resolve } from 'node:path';
import { ErrorCode, PgExtractError } from './errors';
import { DEFAULT_FILE_MODE } from './storage/output-root';
import { DEFAULT_TASK_QUEUE } from './contract/definitions';

export interface ConnectionConfig {
  /** @default localhost:7233 (TEMPORAL_ADDRESS) */
  temporalAddress: string;
  /** @default default (TEMPORAL_NAMESPACE) */
  namespace: string;
  /** @default pg-extract (PG_EXTRACT_TASK_QUEUE) */
  taskQueue: string;
}

export function connectionConfig(env: NodeJS.ProcessEnv = process.env): ConnectionConfig {
  return {
    temporalAddress: env.TEMPORAL_ADDRESS || 'localhost:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: env.PG_EXTRACT_TASK_QUEUE || DEFAULT_TASK_QUEUE,
  };
}

/** `default` → PG_EXTRACT_SOURCE_URL; `NAME` → PG_EXTRACT_SOURCE_<NAME>_URL. */
export function sourceUrl(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return connectionUrl('SOURCE', name, env);
}

/** `NAME` → PG_EXTRACT_TARGET_<NAME>_URL. */
export function targetUrl(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return connectionUrl('TARGET', name, env);
}

function connectionUrl(kind: 'SOURCE' | 'TARGET', name: string, env: NodeJS.ProcessEnv): string {
  const variable = name === 'default' && kind === 'SOURCE' ? 'PG_EXTRACT_SOURCE_URL' : `PG_EXTRACT_${kind}_${name.toUpperCase()}_URL`;
  const url = env[variable];
  if (!url) {
    throw new PgExtractError(ErrorCode.SOURCE_UNKNOWN, `${kind.toLowerCase()} ${JSON.stringify(name)} is not configured on this worker (set ${variable})`, {
      field: kind === 'SOURCE' ? 'source' : 'target',
    });
  }
  return url;
}

/** The output root every file must stay inside (PG_EXTRACT_OUT_DIR, default ./extracts). */
export function outputRoot(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.PG_EXTRACT_OUT_DIR || 'extracts');
}

/**
 * Mode of output files (PG_EXTRACT_FILE_MODE, octal, default 0600); folders get the matching
 * mode (0600 → 0700, 0640 → 0750). It may widen reading, never drop the owner's read/write.
 */
export function outputFileMode(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.PG_EXTRACT_FILE_MODE;
  if (!text) return DEFAULT_FILE_MODE;
  return checkFileMode(/^0?[0-7]{3}$/.test(text) ? parseInt(text, 8) : NaN, 'PG_EXTRACT_FILE_MODE');
}

/**
 * `mode` if it keeps the owner's read/write and lets others at most read: no execute bit, and no
 * write bit for group or others (their folders would let them delete the run's marker or replace its
 * files). Else INPUT_INVALID naming `field`.
 */
export function checkFileMode(mode: number, field: string): number {
  if (!(Number.isInteger(mode) && mode >= 0 && mode <= 0o777 && (mode & 0o600) === 0o600 && (mode & 0o133) === 0)) {
    throw new PgExtractError(
      ErrorCode.INPUT_INVALID,
      `${field} must be an octal file mode with owner read/write, no execute bits and no write for group or others, e.g. 0640`,
      {
        field,
      },
    );
  }
  return mode;
}

/**
 * Whether output files bypass the page cache (PG_EXTRACT_DIRECT_IO: `on`, the default, or `off`):
 * see src/storage/durable-file-sink.ts.
 */
export function outputDirectIo(env: NodeJS.ProcessEnv = process.env): boolean {
  const text = env.PG_EXTRACT_DIRECT_IO;
  if (!text || text === 'on') return true;
  if (text === 'off') return false;
  throw new PgExtractError(ErrorCode.INPUT_INVALID, "PG_EXTRACT_DIRECT_IO must be 'on' or 'off'", { field: 'PG_EXTRACT_DIRECT_IO' });
}

/** PG_EXTRACT_MAX_CONCURRENT_ACTIVITIES: partitions (and other activities) one worker runs at once. */
export function maxConcurrentActivities(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 1000) {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, 'PG_EXTRACT_MAX_CONCURRENT_ACTIVITIES must be an integer from 1 to 1000', {
      field: 'PG_EXTRACT_MAX_CONCURRENT_ACTIVITIES',
    });
  }
  return n;
}

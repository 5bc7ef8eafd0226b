/**
 * The source and target URLs a worker is configured with, checked when it starts: an unknown
 * scheme or a bad connect timeout stops the worker with the variable's name, where each run that
 * named the source failed on its own, the input blamed.
 */
import { ErrorCode, PgExtractError } from '../errors';
import { connectTimeoutMs } from '../postgres/connect-timeout';
import { sourceKindOf } from '../sources/source-kind';

/** PG_EXTRACT_SOURCE_URL, PG_EXTRACT_SOURCE_<NAME>_URL and PG_EXTRACT_TARGET_<NAME>_URL. */
const URL_VARIABLE = /^PG_EXTRACT_(SOURCE|TARGET)(_.+)?_URL$/;

/** Throws INPUT_INVALID naming the first configured URL no run could use (its words never quoted: it holds a password). */
export function checkConfiguredUrls(env: NodeJS.ProcessEnv): void {
  for (const [variable, url] of Object.entries(env)) {
    const kind = URL_VARIABLE.exec(variable)?.[1];
    if (!kind || !url) continue;
    try {
      const source = sourceKindOf(url);
      if (kind === 'TARGET' && source !== 'postgresql') throw new Error('a target is a PostgreSQL database (postgres:// or postgresql://)');
      if (source === 'postgresql') connectTimeoutMs(url, env);
    } catch (err) {
      throw new PgExtractError(ErrorCode.INPUT_INVALID, `${variable}: ${(err as Error).message}`, { field: variable, cause: err });
    }
  }
}

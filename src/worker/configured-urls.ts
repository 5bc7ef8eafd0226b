/**
 * The source and target URLs a worker is configured with, looked at when it starts: an unknown
 * scheme, a target that is not PostgreSQL, a bad connect timeout or TLS setting (an sslmode or
 * ssl-mode that is not one, a root certificate the worker cannot read) is logged then, naming the
 * variable, beside the failure (its code) of each run that names that source or target.
 */
import { connectTimeoutMs } from '../postgres/connect-timeout';
import { mysqlTarget } from '../mysql/connection-url';
import { sessionTarget } from '../postgres/connection-url';
import { sourceKindOf } from '../sources/source-kind';

/** PG_EXTRACT_SOURCE_URL, PG_EXTRACT_SOURCE_<NAME>_URL and PG_EXTRACT_TARGET_<NAME>_URL. */
const URL_VARIABLE = /^PG_EXTRACT_(SOURCE|TARGET)(_.+)?_URL$/;

/** A configured URL no run could use: the variable and why (the URL's words never quoted: it holds a password). */
export interface UrlProblem {
  variable: string;
  problem: string;
}

export function configuredUrlProblems(env: NodeJS.ProcessEnv): UrlProblem[] {
  const problems: UrlProblem[] = [];
  for (const [variable, url] of Object.entries(env)) {
    const kind = URL_VARIABLE.exec(variable)?.[1];
    if (!kind || !url) continue;
    try {
      const source = sourceKindOf(url);
      if (kind === 'TARGET' && source !== 'postgresql') throw new Error('a target is a PostgreSQL database (postgres:// or postgresql://)');
      if (source === 'postgresql') {
        connectTimeoutMs(url, env);
        sessionTarget(url, env);
      } else mysqlTarget(url);
    } catch (err) {
      problems.push({ variable, problem: (err as Error).message });
    }
  }
  return problems;
}

/** A TLS file a database URL names (a CA, a client certificate or key), read on the worker that connects. */
import { readFileSync } from 'node:fs';
import { ErrorCode, PgExtractError } from '../errors';

/** The file's text, or INPUT_INVALID naming the URL's `parameter` when this worker cannot read it. */
export function certificateFile(parameter: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const why = (err as { code?: string }).code ?? (err as Error).message;
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `${parameter} ${JSON.stringify(path)} cannot be read on this worker: ${why}`, {
      field: parameter,
      cause: err,
    });
  }
}

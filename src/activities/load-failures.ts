/**
 * Which load failures are definite: retrying the same load cannot cure them, so the loader
 * reports `failed` with a coded reason and the run aborts. Anything else (a dropped connection
 * 08xxx, a terminated backend 57P01, a serialization failure or deadlock 40001/40P01) is thrown
 * and retried; the workflow still aborts with the last error's code once retries run out.
 */
import { codeInfo, errorCodeOf } from '../errors';
import { redactUrl } from '../redact';
import { LOAD_MESSAGE_LIMIT } from '../contract/load-report';
import { failureTypeOf } from './failures';

/**
 * SQLSTATE classes that are the load's own data or definition: 0A feature not supported (0A000
 * TRUNCATE of a table another table references, a set's `replace`), 22 data exception (22P02 a
 * value the column rejects), 23 integrity constraint, 42 syntax or access rule (42501 permission),
 * 3F a schema the rows name that the target lacks (a regclass or regtype loaded by name), 44 a view's
 * WITH CHECK OPTION, 54 a program limit, 55000 alone of class 55 (a view that takes no INSERT, or no
 * DELETE for a `replace`: neither an INSTEAD OF trigger nor updatable; 55P03, a lock not granted in time,
 * and 55006, an object in use, may pass), and what the target's own code raises on the
 * rows: P0 PL/pgSQL (a trigger's RAISE EXCEPTION, an ASSERT), 2F and 38 an SQL or external
 * routine's exception. Each of five tries read and COPYed every file again to meet the same error.
 */
const DEFINITE_SQLSTATE = /^SQLSTATE_((0A|22|23|3F|42|44|54|P0|2F|38)[0-9A-Z]{3}|55000)$/;

/** The reason code when `err` is a definite load failure, else null (retry). */
export function definiteLoadFailure(err: unknown): string | null {
  const code = errorCodeOf(err);
  // Our codes that retrying cannot cure: bad configuration or input (an unconfigured target, an unknown table), a checksum mismatch.
  if (code) return codeInfo(code).retryable ? null : code;
  const type = failureTypeOf(err as { name?: string; code?: unknown });
  return DEFINITE_SQLSTATE.test(type) ? type : null;
}

/**
 * What a failed load's report says of `err` for people: its message, which names at most one value
 * (PostgreSQL's `detail`, which may quote the whole failing row, is left out: row data stays out of
 * history), without passwords, bounded.
 */
export function loadFailureMessage(err: unknown): string {
  const { message } = err as { message?: unknown };
  return redactUrl(String(message ?? err)).slice(0, LOAD_MESSAGE_LIMIT);
}

/**
 * Parses a value that crossed a boundary (workflow input, an activity request) with its schema,
 * or throws the first issue as a coded error: the code an issue carries in `params.code`, else
 * INPUT_INVALID, and the field it is about. Pure.
 */
import type { z } from 'zod';
import { ErrorCode, PgExtractError } from '../errors';

export function parseOrThrow<S extends z.ZodType>(schema: S, raw: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join('.') || what;
  const code = (issue as { params?: { code?: ErrorCode } }).params?.code ?? ErrorCode.INPUT_INVALID;
  throw new PgExtractError(code, `${field}: ${issue.message}`, { field });
}

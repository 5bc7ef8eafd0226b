/** A failure and its causes, one per line as `TYPE: message` (an ApplicationFailure's type, else `undefined`), for tests to match. */
import { causes } from '../../src/errors';

export function failureChain(err: unknown): string {
  return [...causes(err)].map((e) => `${(e as { type?: string }).type}: ${(e as Error).message}`).join('\n');
}

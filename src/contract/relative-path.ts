/** Whether a relative path climbs out of the folder it is relative to. */
import { sep } from 'node:path';

/** `..` or `../…`: a name that only starts with two dots (`..nightly`) stays inside. */
export function climbsOut(relativePath: string): boolean {
  return relativePath === '..' || relativePath.startsWith(`..${sep}`);
}

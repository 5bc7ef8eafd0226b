/** Locates the checkout's root (the folder holding package.json) from compiled or source code. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

export function projectRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return process.cwd();
  }
}

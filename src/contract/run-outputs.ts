/** The outputs a run's terminal decision deletes or retains: its files and its data package. Pure. */
import type { Manifest } from './extraction-types';

export function runOutputs(manifest: Pick<Manifest, 'files' | 'dataPackage'>): string[] {
  return [...manifest.files.map((f) => f.path), ...(manifest.dataPackage ? [manifest.dataPackage.path] : [])];
}

/** Whether the run's rows went straight into a target (`--via stream`, `--via internal`): no file, and no folder prepared. */
export function loadedWithoutFiles(manifest: Pick<Manifest, 'strategy'>): boolean {
  return manifest.strategy === 'stream_copy' || manifest.strategy === 'internal_query';
}

/** How a run's outputs will be used, as its stores need to know (../storage/output-store.ts). */
import type { ExtractionInput } from '../contract/extraction-input';
import type { SinkOptions } from '../storage/output-store';

export function sinkOptionsOf(input: ExtractionInput): SinkOptions {
  // The built-in loader reads every file back on this machine as soon as the copy ends.
  return { readBack: input.target !== undefined };
}

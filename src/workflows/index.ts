/** The workflows this worker registers. */
export { extractionWorkflow } from './extraction';
export { copyBatchWorkflow } from './copy-batch';

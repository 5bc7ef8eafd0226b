/** The workflows this worker registers. */
export { extractionWorkflow } from './extraction';

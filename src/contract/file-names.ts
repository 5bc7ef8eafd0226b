/**
 * The names of a run's files inside its attempt folder. One place, because a retry and a discard
 * find an attempt's files by these shapes (a batched partition's files by their prefix): a name
 * spelled two ways would leave files no discard removes. Pure: the workflows name files too.
 */
import { type ExportFormat, fileExtension } from './formats';

/** `part-0003`: a partition's place in its table's plan, sortable. */
export function partName(partition: number): string {
  return `part-${String(partition).padStart(4, '0')}`;
}

/** What every batched file of the partition whose files are named `stem` starts with. */
export function batchPrefix(stem: string): string {
  return `${stem}-batch-`;
}

/** The name of a partition's index-th file (`<stem>-batch-00012.csv`): sortable, so a folder lists them in order. */
export function batchFileName(stem: string, index: number, format: ExportFormat): string {
  return `${batchPrefix(stem)}${String(index).padStart(5, '0')}${fileExtension(format)}`;
}

/** The data package's name in an attempt's folder (`<folder>/datapackage.json`): beside its files, receipted like them. */
export function dataPackageName(folder: string): string {
  return `${folder}/datapackage.json`;
}

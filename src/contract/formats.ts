/** Export formats and the file suffix each gets. Pure, so the workflow can name files. */

/** How rows are written. */
export interface ExportFormat {
  format: 'csv' | 'binary';
  /** CSV header line (ignored for binary). */
  header: boolean;
  gzip: boolean;
}

/** The file name suffix for a format. */
export function fileExtension(format: ExportFormat): string {
  return `${format.format === 'binary' ? '.pgcopy' : '.csv'}${format.gzip ? '.gz' : ''}`;
}

/** Export formats: the COPY options and file suffix for each. Pure, so the workflow can name files. */

/** How rows are written. */
export interface ExportFormat {
  format: 'csv' | 'binary';
  /** CSV header line (ignored for binary). */
  header: boolean;
  gzip: boolean;
}

/** `COPY (select) TO STDOUT (…)` in the requested format. */
export function copyOutSql(select: string, format: ExportFormat): string {
  const options = format.format === 'binary' ? 'FORMAT binary' : `FORMAT csv, HEADER ${format.header ? 'true' : 'false'}`;
  return `COPY (${select}) TO STDOUT (${options})`;
}

/** The file name suffix for a format. */
export function fileExtension(format: ExportFormat): string {
  return `${format.format === 'binary' ? '.pgcopy' : '.csv'}${format.gzip ? '.gz' : ''}`;
}

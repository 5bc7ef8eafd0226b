/** Export formats: the COPY options and file suffix for each. Pure, so the workflow can name files. */

/** How rows are written. */
export interface ExportFormat {
  format: 'csv' | 'binary';
  /** CSV header line (ignored for binary). */
  header: boolean;
  gzip: boolean;
}

function copyOptions(format: ExportFormat): string {
  return format.format === 'binary' ? 'FORMAT binary' : `FORMAT csv, HEADER ${format.header ? 'true' : 'false'}`;
}

/** `COPY (select) TO STDOUT (…)` in the requested format. */
export function copyOutSql(select: string, format: ExportFormat): string {
  return `COPY (${select}) TO STDOUT (${copyOptions(format)})`;
}

/** `COPY <table> FROM STDIN (…)` reading the requested format; `table` is already quoted. */
export function copyInSql(table: string, format: ExportFormat): string {
  return `COPY ${table} FROM STDIN (${copyOptions(format)})`;
}

/** The file name suffix for a format. */
export function fileExtension(format: ExportFormat): string {
  return `${format.format === 'binary' ? '.pgcopy' : '.csv'}${format.gzip ? '.gz' : ''}`;
}

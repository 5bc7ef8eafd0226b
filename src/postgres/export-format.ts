/** The COPY statement that writes a query's rows in an export format (src/contract/formats.ts). */
import type { ExportFormat } from '../contract/formats';

/** `COPY (select) TO STDOUT (…)` in the requested format. */
export function copyOutSql(select: string, format: ExportFormat): string {
  const options = format.format === 'binary' ? 'FORMAT binary' : `FORMAT csv, HEADER ${format.header ? 'true' : 'false'}`;
  return `COPY (${select}) TO STDOUT (${options})`;
}

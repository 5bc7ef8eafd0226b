/** The adapter that reads a configured source URL, by its scheme (see source-kind.ts). */
import { mysqlAdapter } from '../mysql/mysql-adapter';
import { postgresAdapter } from './postgres-adapter';
import type { SourceAdapter } from './source-adapter';
import { sourceKindOf } from './source-kind';

export function sourceAdapter(url: string): SourceAdapter {
  return sourceKindOf(url) === 'mysql' ? mysqlAdapter(url) : postgresAdapter(url);
}

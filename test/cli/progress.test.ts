/** `start --wait`'s progress: it keeps waiting through status queries that fail. */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { WorkflowHandle } from '@temporalio/client';
import { followProgress } from '../../src/cli/progress';
import { manifestQuery, statusQuery } from '../../src/contract/definitions';
import type { ExtractionStatus, Manifest } from '../../src/contract/extraction-types';

const status: ExtractionStatus = { phase: 'extracting', table: 'a.b', attempt: 1, partitionsDone: 1, partitionsTotal: 2, rows: 10, bytes: 100, outcome: null };

describe('start --wait progress', () => {
  it('a status query that fails (no worker answered) skips that poll instead of ending the wait', async () => {
    const manifest = { workflowId: 'wf' } as Manifest;
    let polls = 0;
    // The run's handle as far as following it needs: the manifest comes on the third poll; the status fails on the first two.
    const handle = {
      query: async (query: unknown) => {
        if (query === manifestQuery) return ++polls >= 3 ? manifest : null;
        if (query === statusQuery) {
          if (polls < 3) throw new Error('Failed to query Workflow');
          return { ...status, partitionsDone: 2 };
        }
        throw new Error('unexpected query');
      },
      describe: async () => ({ status: { name: 'RUNNING' } }),
    } as unknown as WorkflowHandle;
    const out = new PassThrough() as unknown as NodeJS.WriteStream;
    let written = '';
    out.on('data', (chunk: Buffer) => (written += chunk.toString()));
    assert.equal(await followProgress(handle, out, 1), manifest);
    assert.equal(written, 'extracting 2/2 partitions, 10 rows\n');
  });
});

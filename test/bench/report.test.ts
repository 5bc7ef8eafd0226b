/**
 * The bench's report: medians, each row's ratio to the best baseline of its own rows (the single
 * table's or the schema's), and goals that are null when `--only` left one of their methods out.
 */
import assert from 'node:assert/strict';
import { type Measured, type ReportInput, median, summarize } from '../../bench/report';

const LABEL = '200-table schema';

/** A method whose runs took `seconds` (CPU: a tenth of each, per column), writing `bytes`. */
function measured(name: string, kind: Measured['kind'], seconds: number[], bytes = 0, rss: number[] = []): Measured {
  const cpu = seconds.map((s) => s / 10);
  return { name, kind, seconds, bytes, rss, cpu: { server: cpu, client: cpu, temporal: cpu } };
}

function input(methods: Measured[], over: Partial<ReportInput> = {}): ReportInput {
  return {
    rows: 1_000_000,
    runs: 3,
    machine: 'test',
    tables: 200,
    setLabel: LABEL,
    pgcopydb: null,
    measured: methods,
    empty2: 0.2,
    empty16: 0.48,
    scaling: null,
    ...over,
  };
}

describe('bench report', () => {
  it('median: the middle run of an odd count, the upper middle of an even one', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 3);
  });

  it("ratios each row to the best baseline of its own rows, leaving out the server's, pgcopydb's and DuckDB's", () => {
    const summary = summarize(
      input([
        measured('server COPY TO /dev/null', 'baseline', [1, 1, 1]),
        measured('psql \\copy ×2 (hand-split)', 'baseline', [4, 5, 6]),
        measured('pg_dump -Fd -j2 -a', 'baseline', [6, 6, 6]),
        measured('pg-extract 2 partitions csv', 'ours', [4, 4.4, 5], 200e6, [240, 250, 245]),
        measured(`pg_dump -Fd -j2 -a, ${LABEL}`, 'baseline', [10, 10, 10]),
        measured(`pg-extract --schema binary, ${LABEL}`, 'ours', [8, 9, 8.5]),
      ]),
    );
    const row = (name: string) => summary.results.find((r) => r.name === name)!;
    assert.equal(row('pg-extract 2 partitions csv').ratioToBestBaseline, 0.88, '4.4 / 5 (psql ×2), not / 1 (the server alone)');
    assert.equal(row(`pg-extract --schema binary, ${LABEL}`).ratioToBestBaseline, 0.85, "the schema's rows against the schema's pg_dump");
    assert.deepEqual(row('pg-extract 2 partitions csv'), {
      name: 'pg-extract 2 partitions csv',
      kind: 'ours',
      seconds: [4, 4.4, 5],
      medianSeconds: 4.4,
      rowsPerSecond: 227_273,
      mbPerSecond: 45.5,
      peakRssMb: 250,
      cpuSeconds: { server: 0.44, client: 0.44, temporal: 0.44 },
      ratioToBestBaseline: 0.88,
    });
    assert.equal(summary.goals.twoPartitionsVsHandSplit2, 0.88);
    assert.equal(summary.goals.twoPartitionsVsPgDumpJ2, 0.73);
    assert.equal(summary.goals.schemaVsPgDump.binaryVsJ2, 0.85);
    assert.equal(summary.goals.workerPeakRssMb, 250);
    assert.equal(summary.overhead.perPartitionSeconds, 0.02);
  });

  it('goals whose methods did not run are null; without pgcopydb its goals are null too', () => {
    const summary = summarize(
      input([measured('pg-extract 2 partitions csv', 'ours', [4, 4, 4], 100), measured('pg-extract 2 partitions csv+zstd', 'ours', [5, 5, 5], 25)]),
    );
    assert.equal(summary.goals.twoPartitionsVsHandSplit2, null);
    assert.equal(summary.goals.schemaVsPgDump.csvVsJ2, null);
    assert.deepEqual(summary.goals.compressedVsPlain.csv, { time: 1.25, ratio: 4 });
    assert.deepEqual(summary.goals.compressedVsPlain.binary, { time: null, ratio: null });
    assert.equal(summary.goals.pgToPgVsPgcopydb, null);
    assert.deepEqual(summary.goals.streamVsLoader, { csv: null, binary: null });
  });
});

/**
 * The bench's report: from what each method's runs measured, its medians and ratio to the best
 * baseline, the goals' ratios (bench/results/latest.json), and the table the README quotes. Pure
 * arithmetic but for {@link printReport}, so a method left out by `--only` gives a null ratio, not a crash.
 */

/** What the runs of one method measured, run by run. */
export interface Measured {
  name: string;
  kind: 'baseline' | 'ours';
  seconds: number[];
  /** The bytes its first run wrote (every run writes the same). */
  bytes: number;
  /** Ours: each run's peak RSS in MB. */
  rss: number[];
  cpu: { server: number[]; client: number[]; temporal: number[] };
}

export interface Result {
  name: string;
  kind: string;
  seconds: number[];
  medianSeconds: number;
  rowsPerSecond: number;
  mbPerSecond: number;
  peakRssMb: number | null;
  /** Median CPU seconds of a run: PostgreSQL's backends, the client (our worker or the baseline's tools), the Temporal server. */
  cpuSeconds: { server: number; client: number; temporal: number };
  ratioToBestBaseline?: number;
}

/** A ratio per format; null where `--only` left one of its methods out. */
interface PerFormat {
  csv: number | null;
  binary: number | null;
}

/** 2 partitions on 1 M and on 10 M rows (`--scaling`). */
export interface Scaling {
  rows1M: number;
  rows10M: number;
  ratio: number;
  peakRssMb1M: number;
  peakRssMb10M: number;
  /** Median seconds from workflow start to the first partition scheduled with `partitions: auto` (goal: 10 M within 1.2× of 1 M). */
  planning1M: number;
  planning10M: number;
  /** The holder's own part of it (its plan activity), median seconds. */
  holderPlanning1M: number;
  holderPlanning10M: number;
}

/** What the bench ran: its rows, runs, the many-table schema's label and the pgcopydb baselines' names. */
export interface ReportInput {
  rows: number;
  runs: number;
  machine: string;
  tables: number;
  /** The label the many-table schema's methods carry (`200-table schema`). */
  setLabel: string;
  /** The pgcopydb baselines, on the single table and on the schema; null when pgcopydb is not installed. */
  pgcopydb: { table: string; set: string } | null;
  measured: Measured[];
  /** Median seconds of an empty run with 2 and with 16 partitions. */
  empty2: number;
  empty16: number;
  scaling: Scaling | null;
}

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** `a (csv), b (binary)`, or n/a when the baseline did not run (pgcopydb not installed). */
const formats = (ratios: PerFormat | null): string => (ratios ? `${ratios.csv} (csv), ${ratios.binary} (binary)` : 'n/a');

/** Each method's medians and ratio to the best baseline of its own rows, and the goals' ratios. */
export function summarize(input: ReportInput) {
  const { rows, setLabel, pgcopydb, measured, scaling } = input;
  const results: Result[] = measured.map((e) => {
    const med = median(e.seconds);
    return {
      name: e.name,
      kind: e.kind,
      seconds: e.seconds,
      medianSeconds: med,
      rowsPerSecond: Math.round(rows / med),
      mbPerSecond: Number((e.bytes / 1e6 / med).toFixed(1)),
      peakRssMb: e.rss.length ? Math.round(Math.max(...e.rss)) : null,
      cpuSeconds: {
        server: Number(median(e.cpu.server).toFixed(2)),
        client: Number(median(e.cpu.client).toFixed(2)),
        temporal: Number(median(e.cpu.temporal).toFixed(2)),
      },
    };
  });
  // The schema's rows are measured against the schema's baselines, the single table's against its own.
  const ofSet = (r: Result): boolean => r.name.includes(setLabel);
  const best = (set: boolean): number =>
    Math.min(
      ...results
        .filter(
          (r) => ofSet(r) === set && r.kind === 'baseline' && !r.name.startsWith('server') && !r.name.startsWith('pgcopydb') && !r.name.startsWith('DuckDB'),
        )
        .map((r) => r.medianSeconds),
    );
  for (const r of results) r.ratioToBestBaseline = Number((r.medianSeconds / best(ofSet(r))).toFixed(2));
  const byName = (n: string): number => results.find((r) => r.name === n)?.medianSeconds ?? Number.NaN;
  /** a / b to two places, or null when `--only` left one of them out. */
  const ratio = (a: string, b: string): number | null => (Number.isNaN(byName(a) / byName(b)) ? null : Number((byName(a) / byName(b)).toFixed(2)));
  /** Plain bytes / compressed bytes of two runs of the same rows, or null when `--only` left one out. */
  const shrink = (plain: string, compressed: string): number | null => {
    const bytesOf = (n: string) => measured.find((m) => m.name === n)?.bytes;
    const [p, c] = [bytesOf(plain), bytesOf(compressed)];
    return p && c ? Number((p / c).toFixed(2)) : null;
  };
  const compressedVsPlain = (f: 'csv' | 'binary', plain = `pg-extract 2 partitions ${f}`, compressed = `${plain}+zstd`) => ({
    time: ratio(compressed, plain),
    ratio: shrink(plain, compressed),
  });
  /** A ratio for each of csv and binary. */
  const perFormat = (ratioOf: (f: 'csv' | 'binary') => number | null): PerFormat => ({ csv: ratioOf('csv'), binary: ratioOf('binary') });
  return {
    rows,
    runs: input.runs,
    machine: input.machine,
    date: new Date().toISOString(),
    results,
    goals: {
      twoPartitionsVsHandSplit2: ratio('pg-extract 2 partitions csv', 'psql \\copy ×2 (hand-split)'),
      twoPartitionsVsPgDumpJ2: ratio('pg-extract 2 partitions csv', 'pg_dump -Fd -j2 -a'),
      /** Not a goal: the same comparison against a script that also checksums and fsyncs its files. */
      twoPartitionsVsReceiptedHandSplit2: ratio('pg-extract 2 partitions csv', 'psql \\copy ×2 + sha256sum + sync'),
      /** 2 partitions to a local S3 server / the same run to local files. */
      s3VsLocalFiles: ratio('pg-extract 2 partitions csv → S3 (local SeaweedFS)', 'pg-extract 2 partitions csv'),
      /** 2 partitions with zstd files / the same run uncompressed: time (goal ≤ 1.3) and plain bytes / zstd bytes (goal ≥ 3); gzip's for comparison. */
      compressedVsPlain: {
        csv: compressedVsPlain('csv'),
        binary: compressedVsPlain('binary'),
        csvGzip: compressedVsPlain('csv', 'pg-extract 2 partitions csv', 'pg-extract 2 partitions csv+gzip'),
      },
      /** 2 partitions to Parquet / DuckDB's PostgreSQL scanner to Parquet on 2 threads. */
      parquetVsDuckdbScanner: ratio('pg-extract 2 partitions parquet', 'DuckDB postgres scanner → parquet, 2 threads'),
      workerPeakRssMb: Math.max(...results.map((r) => r.peakRssMb ?? 0), scaling?.peakRssMb1M ?? 0, scaling?.peakRssMb10M ?? 0),
      pgToPgVsPgcopydb: pgcopydb ? perFormat((f) => ratio(`pg-extract 2 partitions ${f} → PG (built-in loader)`, pgcopydb.table)) : null,
      /** `--via stream` / pgcopydb, and / the file-based loader (same format). */
      streamVsPgcopydb: pgcopydb ? perFormat((f) => ratio(`pg-extract 2 partitions ${f} → PG (--via stream)`, pgcopydb.table)) : null,
      streamVsLoader: perFormat((f) => ratio(`pg-extract 2 partitions ${f} → PG (--via stream)`, `pg-extract 2 partitions ${f} → PG (built-in loader)`)),
      /** `--schema` at its defaults (csv, binary) and at 2 in flight / pg_dump -j2 (and -j4) on the many-table schema. */
      schemaVsPgDump: {
        tables: input.tables,
        csvVsJ2: ratio(`pg-extract --schema csv, ${setLabel}`, `pg_dump -Fd -j2 -a, ${setLabel}`),
        csv2InFlightVsJ2: ratio(`pg-extract --schema csv, 2 in flight, ${setLabel}`, `pg_dump -Fd -j2 -a, ${setLabel}`),
        binaryVsJ2: ratio(`pg-extract --schema binary, ${setLabel}`, `pg_dump -Fd -j2 -a, ${setLabel}`),
        csvVsJ4: ratio(`pg-extract --schema csv, ${setLabel}`, `pg_dump -Fd -j4 -a, ${setLabel}`),
      },
      /** Not a goal of its own: `--schema` into a target database (every table in one transaction) / pgcopydb on two sessions, on the many-table schema. */
      schemaToPgVsPgcopydb: pgcopydb ? perFormat((f) => ratio(`pg-extract --schema ${f} → PG (built-in loader), ${setLabel}`, pgcopydb.set)) : null,
    },
    overhead: { emptyRun2PartitionsSeconds: input.empty2, perPartitionSeconds: Number(((input.empty16 - input.empty2) / 14).toFixed(3)) },
    scaling,
  };
}

export type Summary = ReturnType<typeof summarize>;

/** The results table (as the README quotes it) and the goals' lines, on stdout. */
export function printReport(summary: Summary, setLabel: string): void {
  const { results, scaling, overhead } = summary;
  console.log(`\n${summary.rows} rows, median of ${summary.runs} interleaved runs — ${summary.machine}\n`);
  console.log('| method | median s | rows/s | MB/s | × best baseline | worker peak RSS MB | CPU s: server | client | Temporal |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const { server, client: tools, temporal: temporalCpu } = r.cpuSeconds;
    console.log(
      `| ${r.name} | ${r.medianSeconds.toFixed(2)} | ${r.rowsPerSecond} | ${r.mbPerSecond} | ${r.ratioToBestBaseline} | ${r.peakRssMb ?? ''} | ${server} | ${tools} | ${r.kind === 'ours' ? temporalCpu : ''} |`,
    );
  }
  console.log(
    `\noverhead: an empty 2-partition run ${overhead.emptyRun2PartitionsSeconds.toFixed(2)} s; each extra partition ${overhead.perPartitionSeconds} s`,
  );
  if (scaling) {
    console.log(
      `scaling: 2 partitions, 1 M rows ${scaling.rows1M.toFixed(2)} s (peak RSS ${scaling.peakRssMb1M} MB), 10 M rows ${scaling.rows10M.toFixed(2)} s (peak RSS ${scaling.peakRssMb10M} MB): ×${scaling.ratio}; planning ${scaling.planning1M} s and ${scaling.planning10M} s (in the holder ${scaling.holderPlanning1M} s and ${scaling.holderPlanning10M} s)`,
    );
  }
  const { goals } = summary;
  const zstd = goals.compressedVsPlain;
  console.log(
    `goals: 2 partitions / hand-split ×2 = ${goals.twoPartitionsVsHandSplit2} (with sha256sum + sync: ${goals.twoPartitionsVsReceiptedHandSplit2}); / pg_dump -j2 = ${goals.twoPartitionsVsPgDumpJ2}; S3 / local files = ${goals.s3VsLocalFiles}; parquet / DuckDB scanner = ${goals.parquetVsDuckdbScanner}; worker peak RSS ${goals.workerPeakRssMb} MB; PG → PG / pgcopydb = ${formats(goals.pgToPgVsPgcopydb)}`,
  );
  console.log(
    `compressed / plain, 2 partitions: zstd csv ×${zstd.csv.time} time at ratio ${zstd.csv.ratio}, zstd binary ×${zstd.binary.time} at ratio ${zstd.binary.ratio}; gzip csv ×${zstd.csvGzip.time} at ratio ${zstd.csvGzip.ratio}`,
  );
  console.log(`--via stream: / pgcopydb = ${formats(goals.streamVsPgcopydb)}; / built-in loader = ${formats(goals.streamVsLoader)}`);
  const schema = goals.schemaVsPgDump;
  console.log(
    `${setLabel}: --schema / pg_dump -j2 = ${schema.csvVsJ2} (csv), ${schema.csv2InFlightVsJ2} (csv, 2 in flight), ${schema.binaryVsJ2} (binary); csv / pg_dump -j4 = ${schema.csvVsJ4}`,
  );
  console.log(`${setLabel} → PG: --schema (built-in loader) / pgcopydb = ${formats(goals.schemaToPgVsPgcopydb)}`);
}

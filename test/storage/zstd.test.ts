/**
 * The zstd streams against independent readers: a file of many concatenated frames is what
 * `zstd -d` and DuckDB's read_csv read back byte for byte; our reader restores it across any
 * chunking and refuses truncated or foreign bytes; the writer hands each input chunk back only once
 * its frame is made.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { compress } from '@mongodb-js/zstd';
import { ZSTD_LEVEL, ZstdCompress, ZstdDecompress } from '../../src/storage/zstd';
import { zstdDecompressed } from '../support/database';

const ROWS = 20_000;
const csv = Buffer.from(Array.from({ length: ROWS }, (_, i) => `${i},customer ${i % 997},"a ""quoted"" ${'x'.repeat(i % 40)}"\n`).join(''));
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Everything `source` gives through `stage`; rejects with the first error of either. */
async function collect(source: Readable, stage?: Transform): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const gather = async (stream: AsyncIterable<Buffer>) => {
    for await (const chunk of stream) chunks.push(chunk);
  };
  await (stage ? pipeline(source, stage, gather) : gather(source));
  return Buffer.concat(chunks);
}

/** `bytes` as a stream of chunks of `size` bytes. */
const chunked = (bytes: Buffer, size: number) =>
  Readable.from(Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size)));

describe('zstd streams', () => {
  let file: string;
  let compressed: Buffer;
  before(async () => {
    // 16 KiB frames: the file is dozens of concatenated frames.
    compressed = await collect(chunked(csv, 5_000), new ZstdCompress(16 * 1024));
    file = join(await mkdtemp(join(tmpdir(), 'pg-extract-zstd-')), 'rows.csv.zst');
    await writeFile(file, compressed);
  });
  after(async () => {
    if (file) await rm(dirname(file), { recursive: true, force: true });
  });

  it('writes concatenated frames that zstd -d restores byte for byte', async () => {
    assert.ok(compressed.length < csv.length / 3, `compressed to ${compressed.length} of ${csv.length} bytes`);
    assert.equal(sha256(await collect(zstdDecompressed(file))), sha256(csv));
  });

  it("reads back in DuckDB's read_csv (compression zstd) as every row", async () => {
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      const reader = await conn.runAndReadAll(
        `SELECT count(*)::INTEGER, sum(id)::BIGINT FROM read_csv('${file}', compression = 'zstd', header = false, auto_detect = false, columns = {'id': 'INTEGER', 'name': 'VARCHAR', 'note': 'VARCHAR'})`,
      );
      assert.deepEqual(reader.getRows()[0], [ROWS, BigInt((ROWS * (ROWS - 1)) / 2)]);
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  });

  for (const size of [1, 7, 4096, 1 << 20]) {
    it(`decompresses frame by frame from chunks of ${size} bytes`, async () => {
      assert.equal(sha256(await collect(chunked(compressed, size), new ZstdDecompress())), sha256(csv));
    });
  }

  it(`compresses at level ${ZSTD_LEVEL}, which the binding honours (1.2.2 compressed every level as 3)`, async () => {
    const one = await collect(Readable.from([csv]), new ZstdCompress(csv.length));
    assert.deepEqual(one, await compress(csv, ZSTD_LEVEL));
    assert.notDeepEqual(one, await compress(csv, 19), 'level 19 must give other frames than the one written');
  });

  it('hands each input chunk back once its frame is made, so a recycled chunk reused at once changes nothing written', async () => {
    const chunks = Array.from({ length: Math.ceil(csv.length / 5_000) }, (_, i) => Buffer.from(csv.subarray(i * 5_000, (i + 1) * 5_000)));
    const handedBack: Buffer[] = [];
    // What a COPY's next block does to a recycled one: overwritten straight away.
    const recycle = (chunk: Buffer) => handedBack.push(chunk.fill(0x21));
    const frames = await collect(Readable.from(chunks), new ZstdCompress(16 * 1024, recycle));
    assert.equal(sha256(await collect(Readable.from([frames]), new ZstdDecompress())), sha256(csv));
    assert.equal(handedBack.length, chunks.length);
    assert.ok(
      handedBack.every((chunk, i) => chunk === chunks[i]),
      'every chunk, in order, each once',
    );
  });

  it('an empty input is one empty frame, which decompresses to nothing', async () => {
    const empty = await collect(Readable.from([]), new ZstdCompress());
    assert.ok(empty.length > 0);
    assert.equal((await collect(Readable.from([empty]), new ZstdDecompress())).length, 0);
  });

  it('a truncated file or bytes that are not zstd fail the stream', async () => {
    await assert.rejects(collect(Readable.from([compressed.subarray(0, compressed.length - 5)]), new ZstdDecompress()), /truncated zstd data/);
    await assert.rejects(collect(Readable.from([await readFile(__filename)]), new ZstdDecompress()), /not zstd data/);
  });
});

/**
 * CopyOutStream against real PostgreSQL, with pg-copy-streams as the reference decoder: the same
 * bytes for csv and binary, errors before and during the COPY leave a usable session, notices
 * mid-COPY are passed over, a slow reader still gets every byte, and a plain session's COPY reads
 * land in its socket's one buffer (reused-read-socket.ts), while a TLS session's are read from the stream.
 * The last case feeds the
 * decoder a protocol-framed response split at every byte offset, so headers straddling reads
 * are covered wherever they fall, the longest row is measured from them, and pg gets back exactly
 * the bytes after CopyDone.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PassThrough, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type Client, type Connection, DatabaseError } from 'pg';
import { to as referenceCopyTo } from 'pg-copy-streams';
import { CopyOutStream } from '../../src/postgres/copy-out-stream';
import { closeSession, openSession } from '../../src/postgres/session';
import { admin, seedMixedTable, settleSessions } from '../support/database';
import { eventually } from '../support/eventually';
import { live } from '../support/services';

async function withClient<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = await openSession(live().pg.url, 'stream');
  try {
    return await work(client);
  } finally {
    await closeSession(client);
  }
}

/** Counts the reads pushed to the readable side of `client`'s socket (a Buffer each) from now on. */
function countPushes(client: Client): { count: number } {
  const socket = (client as unknown as { connection: Connection }).connection.stream;
  const pushes = { count: 0 };
  const push = socket.push.bind(socket);
  socket.push = (chunk: unknown, encoding?: BufferEncoding) => {
    if (chunk !== null) pushes.count++;
    return push(chunk, encoding);
  };
  return pushes;
}

/** Reads a COPY through `stream` into a sha256 and byte count, optionally slowly. */
async function drain(stream: NodeJS.ReadableStream, delayMs = 0): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const sink = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      bytes += chunk.length;
      delayMs ? setTimeout(done, delayMs) : done();
    },
  });
  await pipeline(stream, sink);
  return { bytes, sha256: hash.digest('hex') };
}

describe('CopyOutStream (live PostgreSQL)', () => {
  afterEach(async () => assert.deepEqual(await settleSessions(), [], 'no session of ours is left'));
  before(async () => {
    await seedMixedTable('cos', 30_000);
    // Rows far larger than a socket read and than the 1 MiB block.
    await admin().query(
      `DROP TABLE IF EXISTS cos.wide; CREATE TABLE cos.wide AS SELECT g AS id, repeat(md5(g::text), 40000 * g) AS v FROM generate_series(1, 3) g`,
    );
  });

  for (const [format, sql] of [
    ['csv', 'COPY (SELECT * FROM cos.t ORDER BY 1) TO STDOUT (FORMAT csv, HEADER)'],
    ['binary', 'COPY (SELECT * FROM cos.t ORDER BY 1) TO STDOUT (FORMAT binary)'],
    ['wide rows', 'COPY (SELECT * FROM cos.wide ORDER BY 1) TO STDOUT (FORMAT csv)'],
  ] as const) {
    it(`yields the same bytes and row count as pg-copy-streams (${format})`, async () => {
      await withClient(async (client) => {
        const reference = client.query(referenceCopyTo(sql));
        const expected = await drain(reference);
        const ours = client.query(new CopyOutStream(sql));
        assert.deepEqual(await drain(ours), expected);
        await client.query('SELECT 1');
        assert.equal(ours.rowCount, reference.rowCount);
        assert.ok(ours.rowCount > 0);
        if (format === 'wide rows') {
          const { rows } = await admin().query<{ n: number }>(`SELECT max(octet_length(id || ',' || v) + 1)::int AS n FROM cos.wide`);
          assert.equal(ours.longestRow, rows[0]!.n, "the longest row's line, with its line end");
        }
      });
    });
  }

  describe('recycled blocks', () => {
    // About 21 MiB: some twenty 1 MiB blocks.
    const sql = "COPY (SELECT g, repeat('x', 100) FROM generate_series(1, 200000) g) TO STDOUT";

    /**
     * Reads like a file sink: holds each chunk until the next arrives, then hashes it and hands it
     * back `handBacks` times. A block reused while still held would change the bytes hashed.
     */
    async function drainRecycling(
      stream: CopyOutStream,
      handBacks: number,
      seen = new Set<ArrayBufferLike>(),
    ): Promise<{ bytes: number; sha256: string; buffers: number }> {
      const hash = createHash('sha256');
      let bytes = 0;
      let held: Buffer | null = null;
      const release = (): void => {
        if (!held) return;
        hash.update(held);
        for (let i = 0; i < handBacks; i++) stream.recycle(held);
        held = null;
      };
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          release();
          held = chunk;
          seen.add(chunk.buffer);
          bytes += chunk.length;
          setImmediate(done);
        },
        final(done) {
          release();
          done();
        },
      });
      await pipeline(stream, sink);
      return { bytes, sha256: hash.digest('hex'), buffers: seen.size };
    }

    for (const handBacks of [1, 2]) {
      it(`reuses blocks handed back ${handBacks === 1 ? 'once' : 'twice'} and yields the same bytes as pg-copy-streams`, async () => {
        await withClient(async (client) => {
          const expected = await drain(client.query(referenceCopyTo(sql)));
          const ours = client.query(new CopyOutStream(sql));
          const { buffers, ...got } = await drainRecycling(ours, handBacks);
          assert.deepEqual(got, expected);
          assert.ok(expected.bytes > 20 << 20, 'enough data for many blocks');
          assert.ok(buffers <= 6, `few distinct blocks: ${buffers}`);
        });
      });
    }

    it('serves the next COPY from the blocks an earlier one handed back, each with its own bytes', async () => {
      await withClient(async (client) => {
        const expected = await drain(client.query(referenceCopyTo(sql)));
        const read = async (seen: Set<ArrayBufferLike>) => {
          const { bytes, sha256 } = await drainRecycling(client.query(new CopyOutStream(sql)), 1, seen);
          return { bytes, sha256 };
        };
        const [first, second] = [new Set<ArrayBufferLike>(), new Set<ArrayBufferLike>()];
        assert.deepEqual(await read(first), expected);
        assert.deepEqual(await read(second), expected);
        assert.ok(
          [...second].some((b) => first.has(b)),
          'a block of the first COPY is reused by the second',
        );
      });
    });

    it('never writes into a buffer it did not push', async () => {
      await withClient(async (client) => {
        const expected = await drain(client.query(referenceCopyTo(sql)));
        const ours = client.query(new CopyOutStream(sql));
        const foreign = Buffer.alloc(1 << 20, 7);
        ours.recycle(foreign);
        assert.deepEqual(await drain(ours), expected);
        assert.ok(
          foreign.every((b) => b === 7),
          'the foreign buffer is untouched',
        );
      });
    });
  });

  it("takes a plain session's reads in the socket's one buffer: none of its COPY's reads is pushed as a Buffer of its own", async () => {
    await withClient(async (client) => {
      const pushes = countPushes(client);
      const sql = 'COPY (SELECT * FROM cos.t ORDER BY 1) TO STDOUT (FORMAT csv)';
      const expected = await drain(client.query(referenceCopyTo(sql)));
      const readsAsStream = pushes.count;
      pushes.count = 0;
      assert.deepEqual(await drain(client.query(new CopyOutStream(sql))), expected);
      const pushed = pushes.count;
      // pg-copy-streams reads the socket as a stream, a Buffer per read; ours takes them all but maybe the one after CopyDone.
      assert.ok(readsAsStream > 10, `pg-copy-streams got ${readsAsStream} reads`);
      assert.ok(pushed <= 1, `${pushed} reads pushed during our COPY`);
    });
  });

  describe('over TLS', () => {
    let tlsUrl: string;
    before(async function () {
      // The server's own TLS, turned on for this block: only a cluster these tests started has a folder this process can write.
      if (live().pg.origin !== 'local-cluster') return this.skip();
      // The server's default certificate and key files, in its data folder (removed with the cluster), owned by its user.
      const dataDir = String((await admin().query('SHOW data_directory')).rows[0].data_directory);
      const [cert, key] = [join(dataDir, 'server.crt'), join(dataDir, 'server.key')];
      await promisify(execFile)('openssl', [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ]);
      const owner = statSync(dataDir);
      for (const file of [cert, key]) {
        chmodSync(file, 0o600);
        if (process.getuid?.() === 0) chownSync(file, owner.uid, owner.gid);
      }
      await admin().query('ALTER SYSTEM SET ssl = on');
      await admin().query('SELECT pg_reload_conf()');
      const url = `${live().pg.url}${live().pg.url.includes('?') ? '&' : '?'}sslmode=no-verify`;
      // The postmaster takes the reload a moment later; until then it refuses TLS.
      await eventually(
        () =>
          openSession(url, 'probe')
            .then(closeSession, () => false)
            .then((r) => r !== false),
        'the server accepting TLS sessions',
      );
      tlsUrl = url;
    });
    after(async () => {
      if (live().pg.origin !== 'local-cluster') return;
      await admin().query('ALTER SYSTEM RESET ssl');
      await admin().query('SELECT pg_reload_conf()');
    });

    it("a TLS session's COPY is read from the stream, a Buffer per read, and yields the same bytes as pg-copy-streams", async () => {
      const client = await openSession(tlsUrl, 'stream');
      try {
        const { rows } = await client.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
        assert.deepEqual(rows, [{ ssl: true }], 'the session is encrypted');
        const sql = 'COPY (SELECT * FROM cos.t ORDER BY 1) TO STDOUT (FORMAT binary)';
        const expected = await drain(client.query(referenceCopyTo(sql)));
        const pushes = countPushes(client);
        const ours = client.query(new CopyOutStream(sql));
        assert.deepEqual(await drain(ours, 1), expected);
        assert.ok(pushes.count > 10, `${pushes.count} reads pushed during our COPY`);
        await client.query('SELECT 1');
        assert.ok(ours.rowCount > 0);
      } finally {
        await closeSession(client);
      }
    });
  });

  for (const table of ['cos.t', 'cos.wide']) {
    it(`pushes blocks of exactly 1 MiB but the last, whatever the reads and rows (${table})`, async () => {
      await withClient(async (client) => {
        const sizes: number[] = [];
        for await (const chunk of client.query(new CopyOutStream(`COPY (SELECT * FROM ${table} ORDER BY 1) TO STDOUT (FORMAT csv)`)))
          sizes.push((chunk as Buffer).length);
        assert.ok(sizes.length >= 3, `${sizes.length} blocks`);
        assert.ok(
          sizes.slice(0, -1).every((n) => n === 1 << 20),
          `block sizes ${sizes.join(', ')}`,
        );
        assert.ok(sizes.at(-1)! > 0 && sizes.at(-1)! <= 1 << 20);
      });
    });
  }

  it('yields nothing for an empty result, and the row count is 0', async () => {
    await withClient(async (client) => {
      const stream = client.query(new CopyOutStream('COPY (SELECT 1 WHERE false) TO STDOUT'));
      assert.deepEqual(await drain(stream), { bytes: 0, sha256: createHash('sha256').digest('hex') });
      await client.query('SELECT 1');
      assert.equal(stream.rowCount, 0);
    });
  });

  it('reports a server error before the COPY starts and leaves the session usable', async () => {
    await withClient(async (client) => {
      await assert.rejects(
        drain(client.query(new CopyOutStream('COPY (SELECT * FROM cos.missing) TO STDOUT'))),
        (err) => err instanceof DatabaseError && err.code === '42P01',
      );
      assert.equal((await client.query('SELECT 7 AS n')).rows[0].n, 7);
    });
  });

  it('reports a server error in the middle of the COPY and leaves the session usable', async () => {
    await withClient(async (client) => {
      const sql = 'COPY (SELECT g, 1 / (g - 20000) FROM generate_series(1, 40000) g) TO STDOUT';
      await assert.rejects(drain(client.query(new CopyOutStream(sql))), (err) => err instanceof DatabaseError && err.code === '22012');
      assert.equal((await client.query('SELECT 7 AS n')).rows[0].n, 7);
    });
  });

  it('passes over notices sent between rows', async () => {
    await withClient(async (client) => {
      await client.query(
        `CREATE OR REPLACE FUNCTION pg_temp.noisy(g int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN IF g % 1000 = 0 THEN RAISE NOTICE 'row %', g; END IF; RETURN g; END $$`,
      );
      const notices: string[] = [];
      client.on('notice', (n) => notices.push(n.message ?? ''));
      const sql = 'COPY (SELECT pg_temp.noisy(g) FROM generate_series(1, 5000) g) TO STDOUT';
      const out = await drain(client.query(new CopyOutStream(sql)));
      const expected = Array.from({ length: 5000 }, (_, i) => `${i + 1}\n`).join('');
      assert.deepEqual(out, { bytes: expected.length, sha256: createHash('sha256').update(expected).digest('hex') });
    });
  });

  it('delivers every byte to a reader slower than the socket', async () => {
    await withClient(async (client) => {
      const sql = 'COPY (SELECT * FROM cos.t ORDER BY 1) TO STDOUT (FORMAT csv)';
      const expected = await drain(client.query(referenceCopyTo(sql)));
      assert.deepEqual(await drain(client.query(new CopyOutStream(sql)), 2), expected);
    });
  });

  it('decodes a response split at every byte offset', async () => {
    // A COPY response as the server frames it: CopyOutResponse, rows with a notice between them,
    // CopyDone, then what pg must get back: CommandComplete and ReadyForQuery.
    const message = (code: string, body: Buffer) =>
      Buffer.concat([Buffer.from(code), Buffer.from([0, 0, 0, 0].map((_, i) => ((body.length + 4) >>> (24 - 8 * i)) & 0xff)), body]);
    const rows = Array.from({ length: 40 }, (_, g) => Buffer.from(`${g}\t${'x'.repeat(g % 7)}\n`));
    const tail = Buffer.concat([message('C', Buffer.from('COPY 40\0')), message('Z', Buffer.from('I'))]);
    const response = Buffer.concat([
      message('H', Buffer.from([0, 0, 2, 0, 0, 0, 0])),
      ...rows.slice(0, 20).map((r) => message('d', r)),
      message('N', Buffer.from('SNOTICE\0Mhello\0\0')),
      ...rows.slice(20).map((r) => message('d', r)),
      message('c', Buffer.alloc(0)),
      tail,
    ]);
    const payload = Buffer.concat(rows);
    const expected = { bytes: payload.length, sha256: createHash('sha256').update(payload).digest('hex') };
    for (let cut = 1; cut < response.length; cut++) {
      const socket = new PassThrough();
      let handedBack = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => (handedBack = Buffer.concat([handedBack, chunk])));
      const stream = new CopyOutStream('COPY …');
      stream.submit({ stream: socket, query: () => undefined } as unknown as Connection);
      const result = drain(stream);
      socket.write(response.subarray(0, cut));
      socket.write(response.subarray(cut));
      assert.deepEqual(await result, expected, `split at ${cut}`);
      assert.equal(stream.longestRow, Math.max(...rows.map((r) => r.length)), `the longest row, split at ${cut}`);
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(handedBack, tail, `split at ${cut}`);
    }
  });
});

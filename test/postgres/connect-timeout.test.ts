/**
 * A session gives up connecting: the timeout is read as libpq reads `connect_timeout` (the URL,
 * then PGCONNECT_TIMEOUT, else 30 s), and a server that accepts the connection but never answers
 * fails the connect with CONNECT_TIMEOUT, naming the host and not the password, and leaves no socket open.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors';
import { DEFAULT_CONNECT_TIMEOUT_S, connectTimedOut, connectTimeoutMs } from '../../src/postgres/connect-timeout';
import { openSession } from '../../src/postgres/session';
import { eventually } from '../support/eventually';
import { type SilentServer, silentServer } from '../support/silent-server';

const URL_BASE = 'postgres://reader:pw-secret@db.example:5432/app';

describe('connect timeout', () => {
  it('reads connect_timeout from the URL before PGCONNECT_TIMEOUT, and defaults to 30 s', () => {
    assert.equal(connectTimeoutMs(URL_BASE, {}), DEFAULT_CONNECT_TIMEOUT_S * 1000);
    assert.equal(connectTimeoutMs(URL_BASE, { PGCONNECT_TIMEOUT: '7' }), 7000);
    assert.equal(connectTimeoutMs(`${URL_BASE}?connect_timeout=12`, { PGCONNECT_TIMEOUT: '7' }), 12_000);
    assert.equal(connectTimeoutMs(`${URL_BASE}?sslmode=disable&connect_timeout=5`, {}), 5000);
  });

  it('follows libpq: 0 or less waits for ever, 1 means 2', () => {
    assert.equal(connectTimeoutMs(`${URL_BASE}?connect_timeout=0`, {}), 0);
    assert.equal(connectTimeoutMs(`${URL_BASE}?connect_timeout=-1`, {}), 0);
    assert.equal(connectTimeoutMs(URL_BASE, { PGCONNECT_TIMEOUT: '0' }), 0);
    assert.equal(connectTimeoutMs(`${URL_BASE}?connect_timeout=1`, {}), 2000);
    assert.equal(connectTimeoutMs(URL_BASE, { PGCONNECT_TIMEOUT: '' }), DEFAULT_CONNECT_TIMEOUT_S * 1000, 'an empty variable is unset');
  });

  it('takes the last of a repeated parameter, as libpq and pg do', () => {
    assert.equal(connectTimeoutMs(`${URL_BASE}?connect_timeout=5&connect_timeout=6`, {}), 6000);
  });

  it('waits for ever where a timer could not wait that long, within the C int libpq takes', () => {
    assert.equal(connectTimeoutMs(`${URL_BASE}?connect_timeout=-2147483648`, {}), 0);
    assert.equal(connectTimeoutMs(`${URL_BASE}?connect_timeout=2147483`, {}), 2_147_483_000);
    assert.equal(connectTimeoutMs(`${URL_BASE}?connect_timeout=2147484`, {}), 0);
    assert.equal(connectTimeoutMs(`${URL_BASE}?connect_timeout=2147483647`, {}), 0);
  });

  it('reads the URL as pg does: a socket path in ?host=, and a URL without a host name', () => {
    assert.equal(connectTimeoutMs('postgres://reader:pw@/app?host=/var/run/postgresql&connect_timeout=5', {}), 5000);
    assert.equal(connectTimeoutMs('postgres:///app?host=/tmp&connect_timeout=0', {}), 0);
  });

  for (const [where, url, env] of <[string, string, NodeJS.ProcessEnv][]>[
    ['the URL', `${URL_BASE}?connect_timeout=2.5`, {}],
    ['the URL', `${URL_BASE}?connect_timeout=ten`, {}],
    ['the URL', `${URL_BASE}?connect_timeout=`, { PGCONNECT_TIMEOUT: '7' }],
    ['the URL', `${URL_BASE}?connect_timeout=2147483648`, {}],
    ['the URL', `${URL_BASE}?connect_timeout=-2147483649`, {}],
    ['PGCONNECT_TIMEOUT', URL_BASE, { PGCONNECT_TIMEOUT: '10s' }],
  ]) {
    it(`refuses a timeout in ${where} that is not a whole number of seconds in a C int (${url.split('?')[1] ?? env.PGCONNECT_TIMEOUT}) with INPUT_INVALID`, () => {
      assert.throws(() => connectTimeoutMs(url, env), { code: ErrorCode.INPUT_INVALID, message: /whole number of seconds/ });
    });
  }

  describe('a server that accepts the connection and never answers', () => {
    let server: SilentServer;
    before(async () => (server = await silentServer()));
    after(() => server.close());

    /** Connects to `url` (served by `at`), which must time out; returns the error once the session's socket is closed. */
    async function timedOut(url: string, at: SilentServer = server): Promise<Error & { code?: string }> {
      const err = await openSession(url, 'probe').then(
        () => assert.fail('the session should not connect'),
        (e: unknown) => e as Error & { code?: string },
      );
      await eventually(async () => at.open() === 0, 'the timed-out session closed its socket', { timeoutMs: 5000 });
      return err;
    }

    it('fails the connect with CONNECT_TIMEOUT naming the host, not the password, and closes its socket', async () => {
      const err = await timedOut(`postgres://reader:pw-secret@127.0.0.1:${server.port()}/app?connect_timeout=2`);
      assert.equal(err.code, ErrorCode.CONNECT_TIMEOUT);
      assert.match(err.message, new RegExp(`could not connect to 127\\.0\\.0\\.1:${server.port()} within 2 s`));
      assert.ok(!err.message.includes('pw-secret'));
    });

    it("names the host and port pg dialled: those of ?host= and ?port=, not the URL's own", async () => {
      const err = await timedOut(`postgres://reader@db.invalid:1/app?host=127.0.0.1&port=${server.port()}&connect_timeout=2`);
      assert.equal(err.code, ErrorCode.CONNECT_TIMEOUT);
      assert.match(err.message, new RegExp(`could not connect to 127\\.0\\.0\\.1:${server.port()} within 2 s`));
    });

    it("names a Unix socket's path", async () => {
      const dir = await mkdtemp(join(tmpdir(), 'pgx-socket-'));
      const onSocket = await silentServer(join(dir, '.s.PGSQL.5432'));
      try {
        const err = await timedOut(`postgres://reader@/app?host=${encodeURIComponent(dir)}&port=5432&connect_timeout=2`, onSocket);
        assert.equal(err.code, ErrorCode.CONNECT_TIMEOUT);
        assert.equal(err.message, `could not connect to ${dir}/.s.PGSQL.5432 within 2 s (connect_timeout)`);
        assert.equal(onSocket.accepted(), 1);
      } finally {
        await onSocket.close();
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('refuses a malformed connect_timeout before connecting', async () => {
      await assert.rejects(openSession(`postgres://reader@127.0.0.1:${server.port()}/app?connect_timeout=soon`, 'probe'), { code: ErrorCode.INPUT_INVALID });
    });
  });

  it('names an IPv6 host in brackets', () => {
    assert.equal(connectTimedOut('::1', 5433, 2000, null).message, 'could not connect to [::1]:5433 within 2 s (connect_timeout)');
  });

  it('leaves a connect that failed otherwise as pg reported it', async () => {
    const hangUp = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = hangUp.address() as AddressInfo;
      const err = await openSession(`postgres://reader@127.0.0.1:${port}/app?connect_timeout=2`, 'probe').then(
        () => assert.fail('the session should not connect'),
        (e: unknown) => e as Error & { code?: string },
      );
      assert.notEqual(err.code, ErrorCode.CONNECT_TIMEOUT);
      assert.match(err.message, /Connection terminated|ECONNRESET/);
    } finally {
      await new Promise((resolve) => hangUp.close(resolve));
    }
  });
});

/**
 * TLS is read from a session's URL (else the libpq environment) as libpq reads it, against a real
 * server that takes TCP sessions only over TLS, with a certificate from a CA of the test's own and
 * a role whose password holds every character a URL must encode: require encrypts without checking the
 * certificate, verify-ca checks its chain and not its name, verify-full both, prefer falls back to
 * no TLS only where the server has none, a Unix socket never uses TLS, a whole run reads with
 * sslmode=require (its password in no history or log), a setting that cannot be
 * honoured is INPUT_INVALID before anything connects, and a refused certificate is
 * TLS_CERTIFICATE_REFUSED naming the server.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { clusterUser, type PostgresService, startLocalPostgres } from '../../devenv/postgres-service';
import { startExtraction, waitForManifest } from '../../src/client';
import { commitUpdate } from '../../src/contract/definitions';
import { ErrorCode } from '../../src/errors';
import { closeSession, openSession } from '../../src/postgres/session';
import { live } from '../support/services';
import { spawnWorker } from '../support/worker-process';
import { type TestCertificates, makeCertificates } from '../support/tls-certs';

/** The server's certificate refused, naming the server (Node's own error named none, and was retried). */
const REFUSED_CHAIN = {
  code: ErrorCode.TLS_CERTIFICATE_REFUSED,
  message: /^the certificate of 127\.0\.0\.1:\d+ was refused: .*UNABLE_TO_VERIFY_LEAF_SIGNATURE/,
};
const REFUSED_NAME = { code: ErrorCode.TLS_CERTIFICATE_REFUSED, message: /ERR_TLS_CERT_ALTNAME_INVALID/ };

/** A password with every character a URL must encode. */
const PASSWORD = "p@ss/w%rd #1 :x?&=+'é";

/** Whether the session's own connection is encrypted (pg_stat_ssl). */
async function encrypted(url: string): Promise<boolean> {
  const client = await openSession(url, 'probe');
  try {
    const answer = await client.query<{ ssl: boolean }>('SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_catalog.pg_backend_pid()');
    return answer.rows[0]!.ssl;
  } finally {
    await closeSession(client);
  }
}

/** `work` with `vars` set in the worker's environment, as a worker would have them. */
async function withEnv<T>(vars: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await work();
  } finally {
    for (const [k, v] of Object.entries(before))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

describe('TLS as libpq reads it (live)', function () {
  this.timeout(60_000);
  let certs: TestCertificates;
  let server: PostgresService;
  let port: string;
  /** The TLS server over TCP at 127.0.0.1, a name its certificate (for db.example) does not carry, as a role whose password needs encoding. */
  let base: string;
  const withQuery = (query: string) => `${base}?${query}`;

  before(async () => {
    certs = makeCertificates('db.example', clusterUser());
    // TCP only with TLS and a password; the socket trusts the superuser, for setting up.
    const hba = join(certs.dir, 'pg_hba.conf');
    writeFileSync(hba, 'local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 reject\n');
    chmodSync(hba, 0o644);
    server = await startLocalPostgres({
      settings: { ssl: 'on', ssl_cert_file: certs.serverCert, ssl_key_file: certs.serverKey, unix_socket_directories: certs.dir, hba_file: hba },
    }).catch((err: unknown) => {
      certs.remove();
      throw err;
    });
    port = new URL(server.url).port;
    await asSuperuser(async (c) => {
      await c.query(`CREATE ROLE reader LOGIN PASSWORD ${c.escapeLiteral(PASSWORD)}`);
      await c.query('CREATE TABLE public.t (id int PRIMARY KEY, v text); INSERT INTO public.t SELECT g, $$row $$ || g FROM generate_series(1, 1000) g');
      await c.query('GRANT SELECT ON public.t TO reader');
    });
    base = `postgres://reader:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/postgres`;
  });
  after(async () => {
    await server?.stop();
    certs?.remove();
  });

  /** `work` on a superuser session over the server's socket. */
  async function asSuperuser<T>(work: (c: Client) => Promise<T>): Promise<T> {
    const c = new Client({ host: certs.dir, port: Number(port), user: 'postgres', database: 'postgres' });
    await c.connect();
    try {
      return await work(c);
    } finally {
      await c.end();
    }
  }

  it('the server takes no session without TLS (so a session that connects is encrypted)', async () => {
    // The server's refusal is a refused login, not retried.
    await assert.rejects(encrypted(base), { code: ErrorCode.SOURCE_AUTH_FAILED, message: /no encryption/ });
  });

  it('sslmode=require encrypts without checking the certificate (a managed server whose CA the worker lacks)', async () => {
    assert.equal(await encrypted(withQuery('sslmode=require')), true);
  });

  it('sslmode=require with sslrootcert checks the chain, as verify-ca', async () => {
    assert.equal(await encrypted(withQuery(`sslmode=require&sslrootcert=${certs.ca}`)), true);
    await assert.rejects(encrypted(withQuery(`sslmode=require&sslrootcert=${certs.otherCa}`)), REFUSED_CHAIN);
  });

  it('sslmode=verify-ca checks the chain and not the host name; verify-full checks both', async () => {
    assert.equal(await encrypted(withQuery(`sslmode=verify-ca&sslrootcert=${certs.ca}`)), true);
    await assert.rejects(encrypted(withQuery(`sslmode=verify-ca&sslrootcert=${certs.otherCa}`)), REFUSED_CHAIN);
    await assert.rejects(encrypted(withQuery(`sslmode=verify-full&sslrootcert=${certs.ca}`)), REFUSED_NAME);
  });

  it('a certificate file without sslmode is TLS that checks the server in full (as pg read it), never plain text', async () => {
    for (const query of [`sslrootcert=${certs.ca}`, `sslrootcert=${certs.otherCa}`])
      await assert.rejects(encrypted(withQuery(query)), { code: ErrorCode.TLS_CERTIFICATE_REFUSED });
    await assert.rejects(encrypted(withQuery(`sslrootcert=${certs.ca}`)), REFUSED_NAME);
  });

  it('a URL naming several hosts is refused with SOURCE_URL_UNSUPPORTED (pg dialled them as one name)', async () => {
    await assert.rejects(encrypted(`postgres://reader@127.0.0.1:${port},127.0.0.2:${port}/postgres?sslmode=require`), {
      code: ErrorCode.SOURCE_URL_UNSUPPORTED,
      message: /names one host/,
    });
  });

  it('sslrootcert=system is the trusted roots of the system (verify-full), not a file named system', async () => {
    await assert.rejects(encrypted(withQuery('sslrootcert=system')), REFUSED_CHAIN);
    await assert.rejects(encrypted(withQuery('sslmode=require&sslrootcert=system')), { code: ErrorCode.INPUT_INVALID, message: /verify-full/ });
  });

  it('PGSSLMODE and PGSSLROOTCERT apply where the URL says nothing, and the URL wins', async () => {
    await withEnv({ PGSSLMODE: 'verify-ca', PGSSLROOTCERT: certs.ca }, async () => {
      assert.equal(await encrypted(base), true);
      await assert.rejects(encrypted(withQuery(`sslrootcert=${certs.otherCa}`)), REFUSED_CHAIN);
    });
    await withEnv({ PGSSLMODE: 'require' }, async () => assert.equal(await encrypted(base), true));
  });

  it('a Unix socket never uses TLS, whatever sslmode says', async () => {
    assert.equal(await encrypted(`postgres:///postgres?host=${certs.dir}&port=${port}&user=postgres&sslmode=require`), false);
  });

  it('takes the values of libpq parameters pg does not read that ask for nothing more', async () => {
    assert.equal(await encrypted(withQuery('sslmode=require&gssencmode=prefer&channel_binding=prefer&target_session_attrs=any')), true);
  });

  it('a run reads over TLS from a worker whose URL says sslmode=require, the encoded password nowhere in its history or log', async () => {
    const taskQueue = `tls-${randomUUID()}`;
    const worker = await spawnWorker(taskQueue, { PG_EXTRACT_SOURCE_URL: withQuery('sslmode=require') });
    try {
      const handle = await startExtraction(live().temporal.client, { table: 'public.t', partitions: 2 }, { taskQueue });
      const manifest = await waitForManifest(handle);
      assert.equal(manifest.totals.rows, 1000);
      await handle.executeUpdate(commitUpdate, { args: [{ outcome: 'committed' }] });
      await handle.result();
      const history = JSON.stringify(await handle.fetchHistory());
      for (const [where, text] of <[string, string][]>[
        ['history', history],
        ['worker output', worker.output()],
      ]) {
        for (const secret of [PASSWORD, encodeURIComponent(PASSWORD), 'w%rd']) assert.ok(!text.includes(secret), `password found in ${where}`);
      }
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  it('sslmode=prefer connects without TLS to a server that has none', async () => {
    const url = new URL(live().pg.url);
    url.searchParams.set('sslmode', 'prefer');
    await encrypted(url.toString());
  });

  for (const [query, why] of <[string, RegExp][]>[
    ['sslmode=verify-ca', /needs sslrootcert/],
    ['sslmode=requir', /sslmode is one of/],
    ['sslmode=verify-full&sslrootcert=/nonexistent/root.crt', /sslrootcert "\/nonexistent\/root.crt" cannot be read on this worker: ENOENT/],
    // libpq parameters pg ignored: these connected, unencrypted, unbound, unchecked for revocation, to the URL's host.
    ['gssencmode=require', /gssencmode="require" in the database URL is not honoured here/],
    ['sslmode=require&channel_binding=require', /channel_binding="require"/],
    [`sslmode=verify-full&sslcrl=${'/nonexistent/root.crl'}`, /sslcrl=/],
    ['hostaddr=10.0.0.1', /hostaddr=/],
    ['service=warehouse', /service=/],
    ['target_session_attrs=standby', /target_session_attrs=/],
  ]) {
    it(`refuses ${query} with INPUT_INVALID before connecting`, async () => {
      await assert.rejects(encrypted(withQuery(query)), { code: ErrorCode.INPUT_INVALID, message: why });
    });
  }
});

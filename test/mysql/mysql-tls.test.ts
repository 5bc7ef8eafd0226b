/**
 * A MySQL URL's TLS is read as MySQL's clients read it, against a real MariaDB with a certificate
 * from a CA of the test's own: `ssl-mode=REQUIRED` encrypts (mysql2 alone ignored it and sent the
 * login and rows in plain text), VERIFY_CA checks the chain against `ssl-ca` and not the name,
 * VERIFY_IDENTITY both, DISABLED does not encrypt, PREFERRED falls back to no TLS only where the
 * server has none, and a setting that cannot be honoured is
 * INPUT_INVALID before anything connects.
 */
import assert from 'node:assert/strict';
import { userInfo } from 'node:os';
import { type MysqlService, startMysql } from '../../devenv/mysql-service';
import { ErrorCode } from '../../src/errors';
import { closeMysql, openMysql } from '../../src/mysql/connection';
import { mysqlService } from '../support/mysql';
import { type TestCertificates, makeCertificates } from '../support/tls-certs';

/** Whether the session is encrypted: the server's own word (Ssl_cipher). */
async function encrypted(url: string): Promise<boolean> {
  const conn = await openMysql(url, 'planner');
  try {
    const [rows] = await conn.promise().query("SHOW SESSION STATUS LIKE 'Ssl_cipher'");
    return (rows as { Value: string }[])[0]!.Value !== '';
  } finally {
    await closeMysql(conn);
  }
}

describe('MySQL TLS as its clients read it (live MariaDB)', function () {
  this.timeout(90_000);
  let certs: TestCertificates;
  let server: MysqlService;
  /** The server at 127.0.0.1, a name its certificate (for db.example) does not carry. */
  const withQuery = (query: string) => `${server.url}?${query}`;

  before(async () => {
    certs = makeCertificates('db.example', userInfo().uid === 0 ? 'mysql' : undefined);
    server = await startMysql([`--ssl-cert=${certs.serverCert}`, `--ssl-key=${certs.serverKey}`]).catch((err: unknown) => {
      certs.remove();
      throw err;
    });
  });
  after(async () => {
    await server?.stop();
    certs?.remove();
  });

  it('ssl-mode=REQUIRED (and ssl_mode, any case) encrypts without checking the certificate', async () => {
    assert.equal(await encrypted(server.url), false, 'the server takes plain sessions too');
    assert.equal(await encrypted(withQuery('ssl-mode=REQUIRED')), true);
    assert.equal(await encrypted(withQuery('ssl_mode=required')), true);
  });

  it('ssl-mode=VERIFY_CA checks the chain against ssl-ca and not the host name; VERIFY_IDENTITY both', async () => {
    assert.equal(await encrypted(withQuery(`ssl-mode=VERIFY_CA&ssl-ca=${certs.ca}`)), true);
    await assert.rejects(encrypted(withQuery(`ssl-mode=VERIFY_CA&ssl-ca=${certs.otherCa}`)), { code: 'HANDSHAKE_SSL_ERROR' });
    await assert.rejects(encrypted(withQuery(`ssl-mode=VERIFY_IDENTITY&ssl-ca=${certs.ca}`)), { code: 'HANDSHAKE_SSL_ERROR', message: /altnames/ });
  });

  it('ssl-ca without ssl-mode checks the chain (VERIFY_CA, as MySQL clients read it) and never falls back to plain text', async () => {
    assert.equal(await encrypted(withQuery(`ssl-ca=${certs.ca}`)), true);
    await assert.rejects(encrypted(withQuery(`ssl-ca=${certs.otherCa}`)), { code: 'HANDSHAKE_SSL_ERROR' });
    await assert.rejects(encrypted(`${(await mysqlService()).url}?ssl-ca=${certs.ca}`));
  });

  it('ssl-mode=DISABLED does not encrypt', async () => {
    assert.equal(await encrypted(withQuery('ssl-mode=DISABLED')), false);
  });

  it('ssl-mode=PREFERRED encrypts where it can, and connects without TLS to a server that has none', async () => {
    assert.equal(await encrypted(withQuery('ssl-mode=PREFERRED')), true);
    assert.equal(await encrypted(`${(await mysqlService()).url}?ssl-mode=PREFERRED`), false);
  });

  for (const [query, why] of <[string, RegExp][]>[
    ['ssl-mode=VERIFY_CA', /needs ssl-ca/],
    ['ssl-mode=REQUIRE', /ssl-mode is one of/],
    ['ssl-mode=VERIFY_IDENTITY&ssl-ca=/nonexistent/ca.pem', /ssl-ca "\/nonexistent\/ca.pem" cannot be read on this worker: ENOENT/],
  ]) {
    it(`refuses ${query} with INPUT_INVALID before connecting`, async () => {
      await assert.rejects(encrypted(withQuery(query)), { code: ErrorCode.INPUT_INVALID, message: why });
    });
  }
});

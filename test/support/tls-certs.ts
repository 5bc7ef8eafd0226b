/**
 * Certificates for TLS tests, made with openssl in a temporary folder: a CA, a server certificate
 * it signs for one host name, and a second CA that signed nothing. The folder and its files are
 * readable by `owner` (a server's OS user when we are root, which a server's key must belong to),
 * and the folder is its own, for a server's socket.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  dir: string;
  /** The CA that signed the server's certificate. */
  ca: string;
  /** A CA that signed nothing here. */
  otherCa: string;
  serverCert: string;
  serverKey: string;
  remove(): void;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A CA and a server certificate for DNS name `serverName` only (not 127.0.0.1: a check of the name fails there). */
export function makeCertificates(serverName: string, owner?: string): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'pg-extract-tls-'));
  const ca = (name: string) =>
    openssl(dir, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '1', '-subj', `/CN=${name}`]);
  try {
    ca('test-ca');
    ca('other-ca');
    writeFileSync(join(dir, 'san.cnf'), `subjectAltName=DNS:${serverName}\n`);
    openssl(dir, ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', `/CN=${serverName}`]);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'test-ca.crt',
      '-CAkey',
      'test-ca.key',
      '-CAcreateserial',
      '-out',
      'server.crt',
      '-days',
      '1',
      '-extfile',
      'san.cnf',
    ]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  chmodSync(dir, 0o755);
  for (const file of ['test-ca.crt', 'other-ca.crt', 'server.crt']) chmodSync(join(dir, file), 0o644);
  chmodSync(join(dir, 'server.key'), 0o600);
  if (owner) {
    const id = (flag: string) => Number(execFileSync('id', [flag, owner]).toString());
    // The folder too: a server may put its socket there.
    for (const path of [dir, join(dir, 'server.key')]) chownSync(path, id('-u'), id('-g'));
  }
  return {
    dir,
    ca: join(dir, 'test-ca.crt'),
    otherCa: join(dir, 'other-ca.crt'),
    serverCert: join(dir, 'server.crt'),
    serverKey: join(dir, 'server.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

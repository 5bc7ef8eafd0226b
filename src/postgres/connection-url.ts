/**
 * A PostgreSQL URL read into a session's settings, its TLS read as libpq reads it. node-postgres
 * (pg 8) reads sslmode prefer, require and verify-ca as verify-full: a managed server's URL with
 * `sslmode=require` (RDS, Cloud SQL, Supabase give one) failed with "unable to verify the first
 * certificate" where psql connects, and verify-ca checked the host name. It also takes PGSSLMODE
 * its own way, reads no PGSSLROOTCERT, sends a TLS request down a Unix socket, and reads
 * `sslrootcert=system` as a file named "system". Here every TLS parameter is the URL's, else its
 * libpq environment variable, and its mode means what it means to libpq (the files libpq would look
 * for under ~/.postgresql are not read: name them); and what pg would misread or
 * ignore (a keyword/value string, a password not percent-encoded, a libpq parameter that asks for
 * something pg does not do) is refused before anything connects.
 */
import type { ConnectionOptions } from 'node:tls';
import type { ClientConfig } from 'pg';
import { parse } from 'pg-connection-string';
import { ErrorCode, PgExtractError } from '../errors';
import { certificateFile } from '../sources/certificate-file';
import { readingUrl, requireEncodedPassword } from '../sources/url-password';

/** The TLS parameters we read ourselves, and the libpq environment variable each falls back to. */
const TLS_PARAMETERS = { sslmode: 'PGSSLMODE', sslrootcert: 'PGSSLROOTCERT', sslcert: 'PGSSLCERT', sslkey: 'PGSSLKEY' } as const;
type TlsParameter = keyof typeof TLS_PARAMETERS;

/** libpq's modes, and pg's own no-verify (require that never checks the certificate). */
const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'no-verify', 'verify-ca', 'verify-full'] as const;

/**
 * libpq parameters pg does not read, each with the values that ask for nothing pg leaves undone
 * (none: any value is refused). pg ignored them all: gssencmode=require connected unencrypted,
 * channel_binding=require and require_auth took whatever authentication the server asked for,
 * sslcrl took a revoked certificate, service and hostaddr dialled other addresses (localhost, for
 * a service), target_session_attrs=standby a primary. Node's TLS floor is already 1.2.
 */
const UNREAD_PARAMETERS: Record<string, readonly string[]> = {
  service: [],
  hostaddr: [],
  target_session_attrs: ['any'],
  load_balance_hosts: ['disable'],
  gssencmode: ['disable', 'prefer'],
  channel_binding: ['disable', 'prefer'],
  require_auth: [],
  requirepeer: [],
  sslcrl: [],
  sslcrldir: [],
  ssl_min_protocol_version: ['TLSv1', 'TLSv1.1', 'TLSv1.2'],
  ssl_max_protocol_version: [],
};

/** What a session is given: pg's settings, and whether a server without TLS may be asked again without it (libpq's allow, prefer). */
export interface SessionTarget {
  config: ClientConfig;
  plainIfRefused: boolean;
}

/**
 * The URL's settings as pg's own parser reads them, without the TLS parameters (which it would read
 * its own way, opening their files): pure, for reading `connect_timeout` and the host.
 */
export function urlSettings(url: string): Record<string, string | undefined> & ClientConfig {
  return readingUrl(() => parse(splitTls(requireUrl(url)).rest)) as Record<string, string | undefined> & ClientConfig;
}

/**
 * `url`, if pg can read it as meant: a postgres:// or postgresql:// URL with its password encoded
 * (../sources/url-password.ts), or pg's own socket form ("/dir db"). pg reads a libpq keyword/value
 * string (`host=db dbname=app password=…`) as a path: it dialled a host named "base" and would have
 * sent the whole string, password and all, as the database name.
 */
function requireUrl(url: string): string {
  if (url.startsWith('/')) return url;
  if (!/^postgres(?:ql)?:\/\//i.test(url)) {
    throw new PgExtractError(
      ErrorCode.SOURCE_URL_UNSUPPORTED,
      'a PostgreSQL database is given as a URL, postgres://user:password@host:port/dbname?sslmode=…; keyword/value strings (host=… dbname=…) are not read',
      { field: 'url' },
    );
  }
  requireEncodedPassword(url);
  // pg dials "h1,h2" as one name (ENOTFOUND, retried), where libpq tries each host in turn.
  if (/^[a-z]+:\/\/(?:[^@/?#]*@)?[^/?#]*,/i.test(url)) {
    throw new PgExtractError(ErrorCode.SOURCE_URL_UNSUPPORTED, 'a PostgreSQL URL names one host here: give each server its own source or target', {
      field: 'url',
    });
  }
  return url;
}

/**
 * pg's settings for `url`: its own, and TLS from sslmode, sslrootcert, sslcert and sslkey (the URL's,
 * else PGSSLMODE, PGSSLROOTCERT, PGSSLCERT, PGSSLKEY) as libpq reads them. A libpq parameter pg
 * would ignore where it asks for something ({@link UNREAD_PARAMETERS}), a mode libpq does not know,
 * verify-ca without a root certificate, or a certificate file that cannot be read is INPUT_INVALID.
 */
export function sessionTarget(url: string, env: NodeJS.ProcessEnv = process.env): SessionTarget {
  const { rest, tls } = splitTls(requireUrl(url));
  const config = readingUrl(() => parse(rest)) as Record<string, unknown> & ClientConfig;
  for (const [name, honoured] of Object.entries(UNREAD_PARAMETERS)) {
    const value = config[name];
    if (typeof value === 'string' && !honoured.includes(value)) {
      throw new PgExtractError(
        ErrorCode.INPUT_INVALID,
        `${name}=${JSON.stringify(value.slice(0, 40))} in the database URL is not honoured here; leave it out`,
        {
          field: name,
        },
      );
    }
  }
  for (const [name, variable] of Object.entries(TLS_PARAMETERS) as [TlsParameter, string][]) tls[name] ??= env[variable] || undefined;
  // A certificate file without a mode is TLS that checks the server in full, as pg itself read it: never plain text.
  const mode = tls.sslmode ?? (tls.sslrootcert !== undefined || tls.sslcert !== undefined || tls.sslkey !== undefined ? 'verify-full' : undefined);
  // pg's own ssl=true|1|0 stands when nothing says sslmode; nothing at all is no TLS (pg's default, not libpq's prefer).
  if (mode === undefined) return { config: { ...config, ssl: config.ssl ?? false }, plainIfRefused: false };
  if (!isSslMode(mode)) {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `sslmode is one of ${SSL_MODES.join(', ')}; not ${JSON.stringify(mode.slice(0, 40))}`, {
      field: 'sslmode',
    });
  }
  // libpq never uses TLS on a Unix socket, whatever sslmode says.
  const host = String(config.host || env.PGHOST || '');
  if (mode === 'disable' || host.startsWith('/')) return { config: { ...config, ssl: false }, plainIfRefused: false };
  return { config: { ...config, ssl: tlsOptions(mode, tls) }, plainIfRefused: mode === 'allow' || mode === 'prefer' };
}

function isSslMode(mode: string): mode is (typeof SSL_MODES)[number] {
  return (SSL_MODES as readonly string[]).includes(mode);
}

/**
 * libpq's meaning of each mode: allow, prefer and require encrypt without checking the server's
 * certificate (require checks its chain when given a root certificate, as verify-ca); verify-ca
 * checks the chain against the root certificate, verify-full the host name too. `sslrootcert=system`
 * is the system's trusted roots (Node's), only for verify-full, as libpq 16 allows it.
 */
function tlsOptions(mode: Exclude<(typeof SSL_MODES)[number], 'disable'>, tls: Partial<Record<TlsParameter, string>>): ConnectionOptions {
  const rootcert = tls.sslrootcert;
  const system = rootcert === 'system';
  if (system && mode !== 'verify-full') {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `sslrootcert=system checks the server's name: use it with sslmode=verify-full, not ${mode}`, {
      field: 'sslrootcert',
    });
  }
  if (mode === 'verify-ca' && rootcert === undefined) {
    // Node's trusted roots would accept a certificate anyone got for any name from a public CA.
    throw new PgExtractError(ErrorCode.INPUT_INVALID, 'sslmode=verify-ca needs sslrootcert, the root certificate that signed the server', {
      field: 'sslrootcert',
    });
  }
  const options: ConnectionOptions = {};
  if (rootcert !== undefined && !system) options.ca = certificateFile('sslrootcert', rootcert);
  if (tls.sslcert !== undefined) options.cert = certificateFile('sslcert', tls.sslcert);
  if (tls.sslkey !== undefined) options.key = certificateFile('sslkey', tls.sslkey);
  const checksChain = mode === 'verify-ca' || mode === 'verify-full' || (mode === 'require' && rootcert !== undefined);
  if (!checksChain) options.rejectUnauthorized = false;
  else if (mode !== 'verify-full') options.checkServerIdentity = () => undefined;
  return options;
}

/**
 * `url` without its TLS parameters (and pg's own uselibpqcompat, which they replace), and those
 * parameters (the last of each, as pg takes them). A URL without a query is left as it is.
 */
function splitTls(url: string): { rest: string; tls: Partial<Record<TlsParameter, string>> } {
  const tls: Partial<Record<TlsParameter, string>> = {};
  const q = url.indexOf('?');
  if (q < 0) return { rest: url, tls };
  const end = url.indexOf('#', q);
  const kept: string[] = [];
  for (const pair of url.slice(q + 1, end < 0 ? undefined : end).split('&')) {
    const [name, value] = [...new URLSearchParams(pair)][0] ?? [];
    if (name !== undefined && Object.hasOwn(TLS_PARAMETERS, name)) tls[name as TlsParameter] = value!;
    else if (name !== 'uselibpqcompat') kept.push(pair);
  }
  return { rest: `${url.slice(0, q)}${kept.length ? `?${kept.join('&')}` : ''}${end < 0 ? '' : url.slice(end)}`, tls };
}

/**
 * A MySQL URL's TLS, read as MySQL's own clients read it. mysql2 knows only its own `ssl` parameter
 * (JSON, or a profile name): it ignored `ssl-mode` and `ssl-ca` with a line on stderr and connected
 * in plain text, so a URL that asked for TLS (`?ssl-mode=REQUIRED`, as DigitalOcean gives one)
 * sent its login and every row unencrypted. Here `ssl-mode` (DISABLED, PREFERRED, REQUIRED,
 * VERIFY_CA, VERIFY_IDENTITY) and the files `ssl-ca`, `ssl-cert` and `ssl-key` (or `ssl_mode` …,
 * as option files spell them) become mysql2's TLS options; a URL without them keeps mysql2's reading.
 */
import { ErrorCode, PgExtractError } from '../errors';
import { certificateFile } from '../sources/certificate-file';
import { readingUrl, requireEncodedPassword } from '../sources/url-password';

const MODES = ['DISABLED', 'PREFERRED', 'REQUIRED', 'VERIFY_CA', 'VERIFY_IDENTITY'] as const;
const FILES = { 'ssl-ca': 'ca', 'ssl-cert': 'cert', 'ssl-key': 'key' } as const;
type FileParameter = keyof typeof FILES;

/** mysql2's TLS options (its `ssl`): Node's, and whether the server's name is checked. */
export interface MysqlTls {
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized: boolean;
  verifyIdentity: boolean;
}

/** What a session is given: the URL for mysql2 without our parameters, its TLS, and whether a server without TLS may be asked again without it (PREFERRED). */
export interface MysqlTarget {
  uri: string;
  ssl: MysqlTls | undefined;
  plainIfRefused: boolean;
}

/**
 * mysql2's URL and TLS for `url`. REQUIRED and PREFERRED encrypt without checking the server's
 * certificate (its chain, when given `ssl-ca`), VERIFY_CA checks its chain against `ssl-ca`,
 * VERIFY_IDENTITY its name too (against the system's roots without `ssl-ca`); `ssl-ca` without a
 * mode is VERIFY_CA, other files without one PREFERRED. An unknown mode,
 * VERIFY_CA without `ssl-ca` or a file the worker cannot read is INPUT_INVALID; a password not
 * percent-encoded, SOURCE_URL_UNSUPPORTED (../sources/url-password.ts).
 */
export function mysqlTarget(url: string): MysqlTarget {
  requireEncodedPassword(url);
  const parsed = readingUrl(() => new URL(url));
  const given = (name: string): string | undefined => {
    const value = parsed.searchParams.get(name) ?? parsed.searchParams.get(name.replace('-', '_')) ?? undefined;
    parsed.searchParams.delete(name);
    parsed.searchParams.delete(name.replace('-', '_'));
    return value;
  };
  const modeText = given('ssl-mode');
  const files = Object.fromEntries(Object.keys(FILES).map((name) => [name, given(name)])) as Record<FileParameter, string | undefined>;
  if (modeText === undefined && Object.values(files).every((f) => f === undefined)) return { uri: url, ssl: undefined, plainIfRefused: false };
  const uri = parsed.toString();
  // As MySQL's clients read it: a CA without a mode checks the chain (VERIFY_CA), never falling back to plain text.
  const mode = (modeText ?? (files['ssl-ca'] !== undefined ? 'VERIFY_CA' : 'PREFERRED')).toUpperCase();
  if (!isMode(mode)) {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `ssl-mode is one of ${MODES.join(', ')}; not ${JSON.stringify(mode.slice(0, 40))}`, {
      field: 'ssl-mode',
    });
  }
  if (mode === 'DISABLED') return { uri, ssl: undefined, plainIfRefused: false };
  if (mode === 'VERIFY_CA' && files['ssl-ca'] === undefined) {
    // Node's trusted roots would accept a certificate anyone got for any name from a public CA.
    throw new PgExtractError(ErrorCode.INPUT_INVALID, 'ssl-mode=VERIFY_CA needs ssl-ca, the certificate of the CA that signed the server', {
      field: 'ssl-ca',
    });
  }
  const ssl: MysqlTls = {
    rejectUnauthorized: mode === 'VERIFY_CA' || mode === 'VERIFY_IDENTITY' || files['ssl-ca'] !== undefined,
    verifyIdentity: mode === 'VERIFY_IDENTITY',
  };
  for (const [name, option] of Object.entries(FILES) as [FileParameter, (typeof FILES)[FileParameter]][]) {
    const path = files[name];
    if (path !== undefined) ssl[option] = certificateFile(name, path);
  }
  return { uri, ssl, plainIfRefused: mode === 'PREFERRED' };
}

function isMode(mode: string): mode is (typeof MODES)[number] {
  return (MODES as readonly string[]).includes(mode);
}

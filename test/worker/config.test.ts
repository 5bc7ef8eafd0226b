/**
 * The worker's PG_EXTRACT_DIRECT_IO setting: on by default, off on request, anything else refused
 * with a code; and the redaction of passwords in URLs that messages quote.
 */
import assert from 'node:assert/strict';
import { outputDirectIo, outputFileMode } from '../../src/config';
import { redactUrl } from '../../src/redact';
import { ErrorCode } from '../../src/errors';
import { configuredUrlProblems } from '../../src/worker/configured-urls';
import { coreLogLevel, createLogger } from '../../src/worker/logging';

describe('PG_EXTRACT_DIRECT_IO', () => {
  it('is on unless set to off', () => {
    assert.equal(outputDirectIo({}), true);
    assert.equal(outputDirectIo({ PG_EXTRACT_DIRECT_IO: '' }), true);
    assert.equal(outputDirectIo({ PG_EXTRACT_DIRECT_IO: 'on' }), true);
    assert.equal(outputDirectIo({ PG_EXTRACT_DIRECT_IO: 'off' }), false);
  });

  it('refuses any other value with INPUT_INVALID naming the variable', () => {
    for (const value of ['0', 'false', 'OFF', 'yes']) {
      assert.throws(() => outputDirectIo({ PG_EXTRACT_DIRECT_IO: value }), { code: ErrorCode.INPUT_INVALID, field: 'PG_EXTRACT_DIRECT_IO' });
    }
  });
});

describe('PG_EXTRACT_FILE_MODE', () => {
  it('takes a mode that keeps the owner read/write and lets others read at most', () => {
    assert.equal(outputFileMode({}), 0o600);
    for (const [text, mode] of [
      ['0600', 0o600],
      ['640', 0o640],
      ['0644', 0o644],
    ] as const)
      assert.equal(outputFileMode({ PG_EXTRACT_FILE_MODE: text }), mode);
  });

  it('refuses execute bits, a missing owner bit and write for group or others (their folders would be 0777), naming the variable', () => {
    for (const text of ['0666', '0664', '0620', '0602', '0700', '0400', '0200', '1600', 'rw', '06400']) {
      assert.throws(() => outputFileMode({ PG_EXTRACT_FILE_MODE: text }), { code: ErrorCode.INPUT_INVALID, field: 'PG_EXTRACT_FILE_MODE' }, text);
    }
  });
});

describe('redactUrl', () => {
  it("replaces every form of password PostgreSQL's URL parser reads, and nothing else", () => {
    for (const [given, redacted] of [
      ['connect postgres://u:secret@h:5432/db failed', 'connect postgres://u:***@h:5432/db failed'],
      ['postgres://u:p@ss@h/db', 'postgres://u:***@h/db'],
      ['postgresql://h/db?user=u&password=secret&sslmode=require', 'postgresql://h/db?user=u&password=***&sslmode=require'],
      ['postgresql://h/db?sslpassword=key-secret', 'postgresql://h/db?sslpassword=***'],
      ['a postgres://a:x@h1/d and a mysql://b:y@h2/e', 'a postgres://a:***@h1/d and a mysql://b:***@h2/e'],
      ['postgres://u@h:5432/db', 'postgres://u@h:5432/db'],
      ['postgres://h:5432/db?sslmode=require', 'postgres://h:5432/db?sslmode=require'],
      // Forms that went through whole: a space in the password, a percent-encoded key, conninfo, mysql2's password2.
      ['postgresql://user:my pass@host/db', 'postgresql://user:***@host/db'],
      ['postgresql://h/db?pass%77ord=secret', 'postgresql://h/db?pass%77ord=***'],
      [`host=db password=secret dbname=x`, `host=db password=*** dbname=x`],
      [`host=db password='se cret' dbname=x`, `host=db password=*** dbname=x`],
      ['mysql://u@h/db?password2=second', 'mysql://u@h/db?password2=***'],
    ]) {
      assert.equal(redactUrl(given!), redacted, given);
    }
  });
});

describe('PG_EXTRACT_LOG_LEVEL', () => {
  it('takes pino levels in any case (info when unset), forwards core at warn at least, and refuses any other value with INPUT_INVALID', () => {
    const sink = { write: () => undefined };
    assert.equal(createLogger({}, sink).level, 'info');
    assert.equal(createLogger({ PG_EXTRACT_LOG_LEVEL: 'DEBUG' }, sink).level, 'debug');
    assert.deepEqual(['trace', 'debug', 'info', 'warn', 'error'].map(coreLogLevel), ['TRACE', 'DEBUG', 'WARN', 'WARN', 'ERROR']);
    // It was taken as info: the lines asked for never came.
    for (const value of ['verbose', 'warning', '3']) {
      assert.throws(() => createLogger({ PG_EXTRACT_LOG_LEVEL: value }, sink), { code: ErrorCode.INPUT_INVALID, field: 'PG_EXTRACT_LOG_LEVEL' });
    }
  });
});

describe('configured source and target URLs', () => {
  it('are looked at when the worker starts: an unknown scheme, a MySQL target, a bad connect timeout, an unreadable root certificate, a keyword/value string or an unencoded password (its @, /, # or ?) is named by its variable, never with its password', () => {
    const problems = configuredUrlProblems({
      PG_EXTRACT_SOURCE_URL: 'postgress://u:s3cret@h/db',
      PG_EXTRACT_TARGET_WAREHOUSE_URL: 'mysql://u:s3cret@h/db',
      PG_EXTRACT_SOURCE_LATE_URL: 'postgres://u:s3cret@h/db?connect_timeout=soon',
      PG_EXTRACT_SOURCE_SHOP_URL: 'mysql://u:p@h/shop',
      PG_EXTRACT_TARGET_DW_URL: 'postgresql://u:p@h/dw?connect_timeout=10&sslmode=require',
      PG_EXTRACT_SOURCE_RDS_URL: 'postgres://u:s3cret@h/db?sslmode=verify-full&sslrootcert=/nonexistent/rds-ca.pem',
      PG_EXTRACT_SOURCE_DO_URL: 'mysql://u:s3cret@h/db?ssl-mode=REQUIRE',
      PG_EXTRACT_SOURCE_SHOPTLS_URL: 'mysql://u:p@h/shop?ssl-mode=REQUIRED',
      PG_EXTRACT_TARGET_KEYWORDS_URL: 'host=h dbname=dw user=u password=s3cret',
      PG_EXTRACT_SOURCE_SOCKET_URL: '/var/run/postgresql app',
      PG_EXTRACT_SOURCE_SHOPAT_URL: 'mysql://u:s3cret@leakyhalf/x@h/shop',
      PG_EXTRACT_TARGET_AT_URL: 'postgres://u:s3cret@leakyhalf#x@h/dw',
      PG_EXTRACT_SOURCE_QUERYAT_URL: 'postgres://u:p@h/db?application_name=me@corp',
      // A password's ?: its first half read as a port ("Invalid URL", uncoded), or, when digits, dialled as one.
      PG_EXTRACT_SOURCE_QMARK_URL: 'postgres://u:12?s3cret@leakyhalf/db',
      PG_EXTRACT_SOURCE_QDIGITS_URL: 'postgres://u:12?x=s3cret@leakyhalf/db',
      PG_EXTRACT_TARGET_QPORT_URL: 'postgres://u:s3?x=cret@h/dw',
      PG_EXTRACT_SOURCE_SHOPQ_URL: 'mysql://u:s3?x=cret@h/shop',
      // Not a URL at all: pg's "Invalid URL", uncoded before.
      PG_EXTRACT_TARGET_BADPORT_URL: 'postgres://u:s3cret@h:54x32/dw',
      PG_EXTRACT_OUT_DIR: '/x',
    });
    assert.deepEqual(
      problems.map((p) => p.variable),
      [
        'PG_EXTRACT_SOURCE_URL',
        'PG_EXTRACT_TARGET_WAREHOUSE_URL',
        'PG_EXTRACT_SOURCE_LATE_URL',
        'PG_EXTRACT_SOURCE_RDS_URL',
        'PG_EXTRACT_SOURCE_DO_URL',
        'PG_EXTRACT_TARGET_KEYWORDS_URL',
        'PG_EXTRACT_SOURCE_SHOPAT_URL',
        'PG_EXTRACT_TARGET_AT_URL',
        'PG_EXTRACT_SOURCE_QMARK_URL',
        'PG_EXTRACT_SOURCE_QDIGITS_URL',
        'PG_EXTRACT_TARGET_QPORT_URL',
        'PG_EXTRACT_SOURCE_SHOPQ_URL',
        'PG_EXTRACT_TARGET_BADPORT_URL',
      ],
    );
    assert.match(problems[5]!.problem, /keyword\/value strings \(host=… dbname=…\) are not read/);
    for (const p of problems.slice(7, -1)) assert.match(p.problem, /an @ after its host: percent-encode/, p.variable);
    assert.match(problems.at(-1)!.problem, /does not read as a URL: percent-encode/);
    assert.ok(problems.every((p) => !p.problem.includes('s3cret') && !p.problem.includes('leakyhalf')));
    assert.deepEqual(
      configuredUrlProblems({ PG_EXTRACT_SOURCE_URL: 'postgres://u:p@h/db', PGCONNECT_TIMEOUT: 'abc' }).map((p) => p.variable),
      ['PG_EXTRACT_SOURCE_URL'],
    );
  });
});

describe('AWS_S3_FORCE_PATH_STYLE', () => {
  it('takes true and false, or 1 and 0, in any case (TRUE and 1 were taken as false); unset, path style goes with a custom endpoint', async () => {
    const { s3ClientFromEnv } = await import('../../src/storage/s3-client');
    const style = (env: NodeJS.ProcessEnv) => s3ClientFromEnv({ AWS_REGION: 'us-east-1', ...env }).config.forcePathStyle;
    assert.deepEqual(
      ['true', 'TRUE', '1', 'false', 'False', '0'].map((v) => style({ AWS_S3_FORCE_PATH_STYLE: v })),
      [true, true, true, false, false, false],
    );
    assert.deepEqual([style({}), style({ AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:8333' })], [false, true]);
  });
});

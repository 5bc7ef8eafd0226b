/**
 * Structured logs: pino JSON for the worker, the Temporal Runtime (core and SDK) and activity
 * logs. Passwords in URLs and credential-shaped fields are redacted before anything is written.
 * The level comes from PG_EXTRACT_LOG_LEVEL (trace, debug, info, warn, error; default info).
 */
import type { LogLevel, LogMetadata, Logger } from '@temporalio/common';
import pino from 'pino';
import { redactUrl } from '../redact';
import { ErrorCode, PgExtractError } from '../errors';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
type Level = (typeof LEVELS)[number];

/** The level of Temporal core's lines forwarded to `level`'s logger: its warnings at least, more when pino asks for debug or trace. */
export function coreLogLevel(level: string): 'TRACE' | 'DEBUG' | 'WARN' | 'ERROR' {
  return level === 'trace' ? 'TRACE' : level === 'debug' ? 'DEBUG' : level === 'error' ? 'ERROR' : 'WARN';
}

/**
 * Field names redacted wherever they appear in a log record: credentials, and the exported snapshot
 * id, which is not one (see snapshot-coordinator.ts) but lets any session on the source import the
 * snapshot while it lives, so logs do not carry it.
 */
const SECRET_FIELDS = ['password', 'url', 'connectionString', 'sourceUrl', 'targetUrl', 'token', 'snapshotId'];

export function createLogger(env: NodeJS.ProcessEnv = process.env, destination?: pino.DestinationStream): pino.Logger {
  const level = (env.PG_EXTRACT_LOG_LEVEL || 'info').toLowerCase();
  // A level the worker does not know stops it at start: it was taken as info, and the lines asked for never came.
  if (!(LEVELS as readonly string[]).includes(level)) {
    throw new PgExtractError(ErrorCode.INPUT_INVALID, `PG_EXTRACT_LOG_LEVEL is one of ${LEVELS.join(', ')}; not ${JSON.stringify(level.slice(0, 40))}`, {
      field: 'PG_EXTRACT_LOG_LEVEL',
    });
  }
  return pino(
    {
      level,
      base: { service: 'pg-extract', pid: process.pid },
      redact: { paths: SECRET_FIELDS.flatMap((f) => [f, `*.${f}`]), censor: '[redacted]' },
      hooks: {
        // Messages are free text (errors, SQL): strip any URL password that made it in.
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === 'string' ? redactUrl(a) : a)) as Parameters<typeof method>);
        },
      },
    },
    destination ?? pino.destination(2),
  );
}

/** The Temporal SDK's Logger interface, backed by pino. */
export class PinoTemporalLogger implements Logger {
  constructor(private readonly pino: pino.Logger) {}

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    const name = level.toLowerCase() as Level;
    this.pino[(LEVELS as readonly string[]).includes(name) ? name : 'info']({ ...meta, ...errorFields(meta) }, message);
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

/** Errors in metadata become their redacted message and type: stacks stay out of JSON lines. */
function errorFields(meta?: LogMetadata): LogMetadata {
  const err = meta?.error;
  if (!(err instanceof Error)) return {};
  return { error: { type: (err as { type?: string }).type ?? err.name, message: redactUrl(err.message) } };
}

import type { RequestLogEntry } from './request-log-line.js';
import { GatheredLines } from './gathered-lines.js';
import { errorFields, logLine, timestamp, type LogFields } from './log-line.js';
import { type Sink, sinkWrite } from './log-sink.js';

export type { RequestLogEntry } from './request-log-line.js';

/** `info`: requests, events, warnings and failures; `error`: warnings and failures; `silent`: nothing. */
export const LOG_LEVELS = ['info', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type { LogFields } from './log-line.js';

/** Where the service reports. An embedder may pass its own; the default writes JSON lines. */
export interface Logger {
  /** One line per answered request. */
  request(entry: RequestLogEntry): void;
  info(message: string, fields?: LogFields): void;
  error(message: string, error?: unknown, fields?: LogFields): void;
  /**
   * Something an operator should change, though the server runs (plain HTTP beyond loopback, an
   * expired certificate, replication falling behind). Optional: without it, warnings go to `error`.
   * The default logger writes a `"level":"warn"` line on stderr, kept at level `error` too, since
   * that level is chosen to drop request lines, not to hide what needs attention.
   */
  warn?(message: string, fields?: LogFields): void;
  /** Writes out anything gathered; called when the service closes. */
  flush?(): void;
}

/** The default logger. */
export interface JsonLogger extends Logger {
  flush(): void;
  warn(message: string, fields?: LogFields): void;
}

/**
 * JSON lines: requests and information on stdout, warnings and errors on stderr. The log never
 * receives a key or an `Authorization` header: callers pass only the fields above.
 */
export function jsonLogger(
  level: LogLevel = 'info',
  out: Sink = process.stdout,
  err: Sink = process.stderr,
): JsonLogger {
  const showInfo = level === 'info';
  const showErrors = level !== 'silent';
  const gathered = new GatheredLines(sinkWrite(out));
  const { flush } = gathered;
  return {
    flush,
    request(entry) {
      if (showInfo) gathered.add(timestamp(), entry);
    },
    info(message, fields) {
      if (showInfo) gathered.writeOut(logLine('info', message, fields));
    },
    warn(message, fields) {
      if (!showErrors) return;
      flush(); // keep stdout and stderr in the order things happened
      err.write(logLine('warn', message, fields));
    },
    error(message, error, fields) {
      if (!showErrors) return;
      const line = logLine('error', message, { ...fields, ...errorFields(error) });
      flush();
      err.write(line);
    },
  };
}

/** A Logger that always has `warn`: what the service's own modules write to. */
export interface ServiceLogger extends Logger {
  warn(message: string, fields?: LogFields): void;
}

/**
 * The embedder's logger as the service uses it, wrapped once: one without `warn` gets its warnings
 * at `error`, which is kept where request lines are dropped too. One with `warn` is used as it is.
 */
export function serviceLogger(logger: Logger): ServiceLogger {
  if (typeof logger.warn === 'function') return logger as ServiceLogger;
  const wrapped: ServiceLogger = {
    request: (entry) => logger.request(entry),
    info: (message, fields) => logger.info(message, fields),
    error: (message, error, fields) => logger.error(message, error, fields),
    warn: (message, fields) => logger.error(message, undefined, fields),
  };
  if (typeof logger.flush === 'function') wrapped.flush = () => logger.flush?.();
  return wrapped;
}

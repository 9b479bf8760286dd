/** `info`: requests and events; `error`: failures only; `silent`: nothing. */
export const LOG_LEVELS = ['info', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Record<string, string | number | boolean | undefined>;

/** Where the service reports. An embedder may pass its own; the default writes JSON lines. */
export interface Logger {
  /** One line per answered request. */
  request(fields: LogFields): void;
  info(message: string, fields?: LogFields): void;
  error(message: string, error?: unknown, fields?: LogFields): void;
}

interface Sink {
  write(text: string): unknown;
}

/**
 * JSON lines: requests and information on stdout, errors on stderr. The log never receives a key or
 * an `Authorization` header: callers pass only the fields below, and paths without their query.
 */
export function jsonLogger(level: LogLevel = 'info', out: Sink = process.stdout, err: Sink = process.stderr): Logger {
  const rank = LOG_LEVELS.indexOf(level);
  const enabled = (wanted: LogLevel): boolean => rank <= LOG_LEVELS.indexOf(wanted);
  const line = (lvl: LogLevel, msg: string, fields: LogFields | undefined): string =>
    JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields }) + '\n';
  const showRequests = enabled('info');
  const showErrors = enabled('error');
  return {
    request(fields) {
      if (showRequests) out.write(line('info', 'request', fields));
    },
    info(message, fields) {
      if (showRequests) out.write(line('info', message, fields));
    },
    error(message, error, fields) {
      if (!showErrors) return;
      const detail = error instanceof Error ? { error: error.stack ?? error.message } : error === undefined ? {} : { error: String(error) };
      err.write(line('error', message, { ...fields, ...detail }));
    },
  };
}

export const silentLogger: Logger = { request() {}, info() {}, error() {} };

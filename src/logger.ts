/** `info`: requests and events; `error`: failures only; `silent`: nothing. */
export const LOG_LEVELS = ['info', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Record<string, string | number | boolean | undefined>;

/** What is logged of each answered request: never a header, a key or the query string. */
export interface RequestLogEntry {
  id: string;
  method: string;
  /** The path without its query string. */
  path: string;
  status: number;
  ms: number;
}

/** Where the service reports. An embedder may pass its own; the default writes JSON lines. */
export interface Logger {
  /** One line per answered request. */
  request(entry: RequestLogEntry): void;
  info(message: string, fields?: LogFields): void;
  error(message: string, error?: unknown, fields?: LogFields): void;
}

interface Sink {
  write(text: string): unknown;
}

// Lines are gathered and written once per turn of the event loop: under load one write(2) carries
// many requests, instead of a synchronous write per request (which cost a third of GET throughput).
const FLUSH_AT = 64 * 1024;

/**
 * JSON lines: requests and information on stdout, errors on stderr (written at once). The log never
 * receives a key or an `Authorization` header: callers pass only the fields above.
 */
export function jsonLogger(level: LogLevel = 'info', out: Sink = process.stdout, err: Sink = process.stderr): Logger & { flush(): void } {
  const showInfo = level === 'info';
  const showErrors = level !== 'silent';
  let pending = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (pending === '') return;
    const text = pending;
    pending = '';
    out.write(text);
  };
  const enqueue = (text: string): void => {
    pending += text;
    if (pending.length >= FLUSH_AT) flush();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  return {
    /** Writes what is gathered now (before `process.exit`, which would drop it). */
    flush,
    request(entry) {
      if (!showInfo) return;
      enqueue(`{"time":"${new Date().toISOString()}","level":"info","msg":"request","id":${JSON.stringify(entry.id)},` +
        `"method":${JSON.stringify(entry.method)},"path":${JSON.stringify(entry.path)},"status":${entry.status},"ms":${entry.ms}}\n`);
    },
    info(message, fields) {
      if (showInfo) enqueue(line('info', message, fields));
    },
    error(message, error, fields) {
      if (!showErrors) return;
      const detail = error instanceof Error ? { error: error.stack ?? error.message } : error === undefined ? {} : { error: String(error) };
      flush(); // keep stdout and stderr in the order things happened
      err.write(line('error', message, { ...fields, ...detail }));
    },
  };
}

function line(level: LogLevel, msg: string, fields: LogFields | undefined): string {
  return JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }) + '\n';
}

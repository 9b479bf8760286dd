import { Writable } from 'node:stream';
import { requestLine, writeRequestLine, type RequestLogEntry } from './request-log-line.js';

export type { RequestLogEntry } from './request-log-line.js';

/** `info`: requests, events, warnings and failures; `error`: warnings and failures; `silent`: nothing. */
export const LOG_LEVELS = ['info', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Record<string, string | number | boolean | undefined>;

/** Where the service reports. An embedder may pass its own; the default writes JSON lines. */
export interface Logger {
  /** One line per answered request. */
  request(entry: RequestLogEntry): void;
  info(message: string, fields?: LogFields): void;
  error(message: string, error?: unknown, fields?: LogFields): void;
  /** Writes out anything gathered; called when the service closes. */
  flush?(): void;
}

interface Sink {
  write(text: string): unknown;
}

// Request lines are gathered and written together: at most REQUEST_LINE_DELAY_MS after the first,
// or once FLUSH_AT bytes wait. A write per request was a large share of a GET's CPU. Each line is
// encoded at once into one reused off-heap buffer, so no request leaves objects behind that live
// until the write: kept entries survived the young generation's collections and made V8 grow it,
// which cost more than formatting (figures in bench/results.md, "Why the code is shaped this way").
// Other lines are rare and go out at once.
const FLUSH_AT = 64 * 1024;
const REQUEST_LINE_DELAY_MS = 10;
/** Room for FLUSH_AT and a long line after it. */
const WAITING_BYTES = 2 * FLUSH_AT;

/** The default logger, which can also warn. */
export interface JsonLogger extends Logger {
  flush(): void;
  /**
   * Something an operator should change, though the server runs (plain HTTP beyond loopback, an
   * expired certificate): a `"level":"warn"` line on stderr, kept at level `error` too, since that
   * level is chosen to drop request lines, not to hide what needs attention.
   */
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
  // The waiting request lines, as UTF-8.
  let waiting: Buffer | undefined;
  let used = 0;
  let timer: NodeJS.Timeout | undefined;
  // A stream (stdout) is handed the waiting lines as the bytes they are, copied (6 µs per 64 KiB):
  // decoding them to a string, for the stream to encode it back, took 29 µs (bench/results.md).
  const byteSink = out instanceof Writable && !out.writableObjectMode ? out : undefined;
  /** Writes the waiting request lines, and then `last`: in one write to a sink of text. */
  const writeOut = (last: string): void => {
    clearTimeout(timer);
    timer = undefined;
    process.off('exit', flush);
    if (byteSink !== undefined && used > 0) {
      // Taken before the write: a stream that logs from its write, or throws, must not get them twice.
      const bytes = Buffer.from((waiting as Buffer).subarray(0, used));
      used = 0;
      byteSink.write(bytes);
      if (last !== '') byteSink.write(last);
      return;
    }
    const text = used === 0 ? last : (waiting as Buffer).toString('utf8', 0, used) + last;
    used = 0;
    if (text !== '') out.write(text);
  };
  const flush = (): void => writeOut('');
  return {
    /** Writes what is gathered now (before `process.exit`, which would drop it). */
    flush,
    request(entry) {
      if (!showInfo) return;
      waiting ??= Buffer.allocUnsafeSlow(WAITING_BYTES);
      const time = timestamp();
      const end = writeRequestLine(waiting, used, time, entry);
      if (end !== -1) used = end;
      else {
        const line = requestLine(time, entry);
        // A UTF-16 unit takes at most 3 bytes of UTF-8. A line too long to wait goes out at once,
        // after the waiting ones; one that might not fit where they end goes in after they are written.
        const most = 3 * line.length;
        if (most > WAITING_BYTES) return writeOut(line);
        if (used + most > WAITING_BYTES) flush();
        used += waiting.write(line, used);
      }
      if (used >= FLUSH_AT) {
        flush();
      } else if (timer === undefined) {
        // Not unref'd, so a process that ends on its own still writes its last lines; and one that
        // calls process.exit (an embedder after close, an uncaught exception) writes them on 'exit'.
        timer = setTimeout(flush, REQUEST_LINE_DELAY_MS);
        process.once('exit', flush);
      }
    },
    info(message, fields) {
      if (!showInfo) return;
      writeOut(line('info', message, fields));
    },
    warn(message, fields) {
      if (!showErrors) return;
      flush(); // keep stdout and stderr in the order things happened
      err.write(line('warn', message, fields));
    },
    error(message, error, fields) {
      if (!showErrors) return;
      const detail =
        error instanceof Error
          ? { error: error.stack ?? error.message }
          : error === undefined
            ? {}
            : { error: String(error) };
      flush();
      err.write(line('error', message, { ...fields, ...detail }));
    },
  };
}

// The ISO time of the current millisecond, made once per millisecond: `toISOString` formats through
// the C library, and under load many requests end within the same millisecond.
let stampedAt = NaN;
let stamp = '';

function timestamp(): string {
  const now = Date.now();
  if (now !== stampedAt) {
    stampedAt = now;
    stamp = new Date(now).toISOString();
  }
  return stamp;
}

function line(level: 'info' | 'warn' | 'error', msg: string, fields: LogFields | undefined): string {
  return `${JSON.stringify({ time: timestamp(), level, msg, ...fields })}\n`;
}

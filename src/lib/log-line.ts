/** What a line carries besides its time, level and message. */
export type LogFields = Record<string, string | number | boolean | undefined>;

// The ISO time of the current millisecond, made once per millisecond: `toISOString` formats through
// the C library, and under load many requests end within the same millisecond. A memo of the clock,
// the same for every logger in the process.
let stampedAt = NaN;
let stamp = '';

/** The current time as the log writes it (ISO 8601, UTC, milliseconds). */
export function timestamp(): string {
  const now = Date.now();
  if (now !== stampedAt) {
    stampedAt = now;
    stamp = new Date(now).toISOString();
  }
  return stamp;
}

/** A line other than a request's: one JSON object, its time, level and message first. */
export function logLine(level: 'info' | 'warn' | 'error', msg: string, fields: LogFields | undefined): string {
  return `${JSON.stringify({ time: timestamp(), level, msg, ...fields })}\n`;
}

/** The fields an error adds to its line: its stack, or what it is as text. */
export function errorFields(error: unknown): LogFields {
  if (error instanceof Error) return { error: error.stack ?? error.message };
  return error === undefined ? {} : { error: String(error) };
}

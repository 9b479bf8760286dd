/** What is logged of each answered request: never a header, a key or the query string. */
export interface RequestLogEntry {
  id: string;
  method: string;
  /** The path without its query string. */
  path: string;
  status: number;
  ms: number;
  /** The client's address: the peer's, or behind `--trust-proxy` the one the proxies name. */
  client?: string | undefined;
  /** From a valid W3C `traceparent`: its trace id and parent span id, logged as `trace_id` and `span_id`. */
  traceId?: string | undefined;
  spanId?: string | undefined;
  /** An error answer's Error code (`insufficient_scope`, `rate_limited`, …). */
  code?: string | undefined;
  /** On an error answer to a request whose key was accepted: that key's id (never the key). */
  keyId?: string | undefined;
}

/*
 * A request's log line, as JSON text, or written as bytes straight into the logger's buffer. The
 * bytes are the text's exactly; writing them takes no string: a line built from a dozen pieces,
 * flattened and encoded through Buffer#write cost about 525 ns, its bytes written here about 300
 * (bench/results.md, "Issue 34", fourth round).
 */

// Request ids, methods and most paths need no escaping: skip the general serialiser for them.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function jsonString(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** NaN and the infinities are no JSON: written `null`, as JSON.stringify writes them (an embedder's entry). */
const notJson = (value: number): boolean => typeof value === 'number' && !Number.isFinite(value);

/** The line as text: for a line the bytes cannot be written straight (escapes, non-ASCII, no room). */
export function requestLine(time: string, entry: RequestLogEntry): string {
  const failure =
    entry.code === undefined
      ? ''
      : `,"code":${jsonString(entry.code)}${entry.keyId === undefined ? '' : `,"keyId":${jsonString(entry.keyId)}`}`;
  return (
    `{"time":"${time}","level":"info","msg":"request","id":${jsonString(entry.id)},` +
    `"method":${jsonString(entry.method)},` +
    `"path":${jsonString(entry.path)},"status":${notJson(entry.status) ? 'null' : entry.status},` +
    `"ms":${notJson(entry.ms) ? 'null' : milliseconds(entry.ms)}` +
    (entry.client === undefined ? '' : `,"client":${jsonString(entry.client)}`) +
    failure +
    (entry.traceId === undefined ? '' : `,"trace_id":${jsonString(entry.traceId)}`) +
    (entry.spanId === undefined ? '' : `,"span_id":${jsonString(entry.spanId)}`) +
    '}\n'
  );
}

/**
 * Writes the line's bytes into `buffer` at `at` and returns where they end; -1 when a field holds
 * a character JSON escapes or that is not ASCII, a status that is not a 3-digit integer, an `ms`
 * that is no JSON number, or the line would not fit: then nothing counts as written, and the caller writes
 * `requestLine` instead.
 * `time` is the logger's own ISO time (`toISOString`), written as it is, as `requestLine` does.
 */
export function writeRequestLine(buffer: Uint8Array, at: number, time: string, entry: RequestLogEntry): number {
  if (time !== headTime) {
    headTime = time;
    head = Buffer.from(`{"time":"${time}","level":"info","msg":"request","id":"`, 'latin1');
  }
  let end = bytes(buffer, at, head);
  end = plain(buffer, end, entry.id);
  end = bytes(buffer, end, METHOD);
  end = plain(buffer, end, entry.method);
  end = bytes(buffer, end, PATH);
  end = plain(buffer, end, entry.path);
  end = bytes(buffer, end, STATUS);
  const status = entry.status;
  if (!(status >= 100 && status <= 999 && status % 1 === 0) || end === -1 || end + 3 > buffer.length) return -1;
  buffer[end] = 48 + ((status / 100) | 0);
  buffer[end + 1] = 48 + (((status / 10) | 0) % 10);
  buffer[end + 2] = 48 + (status % 10);
  end = bytes(buffer, end + 3, MS);
  end = notJson(entry.ms) ? -1 : plain(buffer, end, milliseconds(entry.ms));
  if (entry.client !== undefined) end = bytes(buffer, plain(buffer, bytes(buffer, end, CLIENT), entry.client), QUOTE);
  if (entry.code !== undefined) {
    end = bytes(buffer, plain(buffer, bytes(buffer, end, CODE), entry.code), QUOTE);
    if (entry.keyId !== undefined) end = bytes(buffer, plain(buffer, bytes(buffer, end, KEY_ID), entry.keyId), QUOTE);
  }
  if (entry.traceId !== undefined)
    end = bytes(buffer, plain(buffer, bytes(buffer, end, TRACE_ID), entry.traceId), QUOTE);
  if (entry.spanId !== undefined) end = bytes(buffer, plain(buffer, bytes(buffer, end, SPAN_ID), entry.spanId), QUOTE);
  return bytes(buffer, end, END);
}

// The line's constant parts as bytes, copied whole; its head with the time, made once per millisecond as the time is.
let headTime: string | undefined;
let head = Buffer.alloc(0);
const METHOD = Buffer.from('","method":"');
const PATH = Buffer.from('","path":"');
const STATUS = Buffer.from('","status":');
const MS = Buffer.from(',"ms":');
const CLIENT = Buffer.from(',"client":"');
const CODE = Buffer.from(',"code":"');
const KEY_ID = Buffer.from(',"keyId":"');
const TRACE_ID = Buffer.from(',"trace_id":"');
const SPAN_ID = Buffer.from(',"span_id":"');
const QUOTE = Buffer.from('"');
const END = Buffer.from('}\n');

/**
 * `text`, which needs no escaping inside a JSON string, as ASCII bytes at `at`: where they end, or -1
 * (also when `at` is -1 already, so that a line's steps need one check at the end).
 */
function plain(buffer: Uint8Array, at: number, text: string): number {
  // An embedder's entry may hold a number where a string belongs: the text path writes it as before.
  if (at === -1 || typeof text !== 'string' || at + text.length > buffer.length) return -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return -1; // control, non-ASCII, '"', '\'
    buffer[at + i] = c;
  }
  return at + text.length;
}

/** `part` at `at`: where it ends, or -1. */
function bytes(buffer: Uint8Array, at: number, part: Uint8Array): number {
  if (at === -1 || at + part.length > buffer.length) return -1;
  buffer.set(part, at);
  return at + part.length;
}

/**
 * `ms` as JavaScript would write it, made from whole numbers: the app gives it in hundredths, and
 * writing a fraction takes V8's shortest-digits algorithm, about 90 ns, where two small integers take
 * a few. Anything not a whole number of hundredths (an embedder's own entry) is written as it is.
 */
export function milliseconds(ms: number): string {
  const hundredths = Math.round(ms * 100);
  // Below 2^46 hundredths (22 years) the two integers give JavaScript's own digits; far above, not always.
  if (hundredths / 100 !== ms || hundredths < 0 || hundredths >= 2 ** 46) return `${ms}`;
  const cents = hundredths % 100;
  const whole = (hundredths - cents) / 100;
  if (cents === 0) return `${whole}`;
  return cents % 10 === 0 ? `${whole}.${cents / 10}` : `${whole}.${cents < 10 ? '0' : ''}${cents}`;
}

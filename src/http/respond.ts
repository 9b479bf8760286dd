import { STATUS_CODES, type ServerResponse } from 'node:http';
import { acceptsGzip, COMPRESS_MIN_BYTES, gzip } from './pipeline/compression.js';
import { HttpError, type ErrorCode } from './http-error.js';
import { JsonSyntaxError } from '../lib/json.js';
import {
  IdempotencyKeyLimitError,
  IdempotencyKeyReusedError,
  RequestInProgressError,
  StoreUnavailableError,
} from '../store/store.js';
import { ValidationError } from '../pet/validate.js';

/**
 * What a handler answers: the body is already JSON text, so sending cannot fail half-way. It may be
 * the bytes of that text (UTF-8), as a store that keeps pets as text hands them out: no decoding to a
 * string and encoding back for the socket.
 */
export interface Reply {
  status: number;
  body: string | Uint8Array;
  headers?: Readonly<Record<string, string>> | undefined;
  /**
   * An event stream instead of a body (a 200 of `text/event-stream`): sent with the headers, then
   * handed the response, which it writes to and ends itself.
   */
  stream?: ((res: ServerResponse) => void) | undefined;
  /** The body gzip-coded already, for an answer that never changes: sent instead of compressing it again. */
  gzipped?: Uint8Array | undefined;
  /** Its media type when not JSON (the reference page's HTML). */
  type?: string | undefined;
}

/** Headers on every response: JSON, never cached, never sniffed as something else. */
const BASE_HEADERS = {
  'content-type': 'application/json',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
} as const;

export function json(status: number, body: string | Uint8Array, headers?: Readonly<Record<string, string>>): Reply {
  return { status, body, headers };
}

/**
 * Writes a reply with its length, the base headers, the request's own headers (`contextHeaders`,
 * name/value pairs such as the request id) and the reply's. Headers go to Node as one flat array,
 * which its header code handles much faster than an object merged from several. With the request's
 * `acceptEncoding`, a body may go out gzip-coded (compression.ts); one that could be says
 * `Vary: Accept-Encoding`.
 */
export function send(
  res: ServerResponse,
  reply: Reply,
  contextHeaders: readonly string[],
  acceptEncoding?: string,
): void {
  if (reply.status === 204) {
    // No content, so neither Content-Type nor Content-Length (RFC 9110 §8.6): a CORS preflight.
    res.writeHead(204, [...contextHeaders, ...Object.entries(reply.headers ?? {}).flat()]);
    res.end();
    return;
  }
  if (reply.stream !== undefined) return sendStream(res, reply, contextHeaders, reply.stream);
  const headers: Array<string | number> = [
    'content-type',
    reply.type ?? BASE_HEADERS['content-type'],
    'cache-control',
    BASE_HEADERS['cache-control'],
    'x-content-type-options',
    BASE_HEADERS['x-content-type-options'],
    ...contextHeaders,
  ];
  if (reply.headers !== undefined) for (const name in reply.headers) headers.push(name, reply.headers[name] as string);
  let body = reply.body;
  const length = Buffer.byteLength(body); // a string's UTF-8 length, or the bytes' count
  if (length >= COMPRESS_MIN_BYTES) headers.push('vary', 'Accept-Encoding');
  if (reply.status === 304) return sendNotModified(res, headers);
  if (acceptEncoding !== undefined && acceptsGzip(acceptEncoding, length)) {
    body = reply.gzipped ?? gzip(body, length);
    headers.push('content-encoding', 'gzip');
    if (length < COMPRESS_MIN_BYTES) headers.push('vary', 'Accept-Encoding');
  }
  headers.push('content-length', body === reply.body ? length : body.length);
  res.writeHead(reply.status, headers);
  res.end(body);
}

/** A 304: the headers of the 200 it stands for but those that describe a body (RFC 9110 §15.4.5), and none. */
function sendNotModified(res: ServerResponse, headers: Array<string | number>): void {
  res.writeHead(304, headers.slice(2));
  res.end();
}

/**
 * An event stream's head: never stored, never transformed (a compressing proxy would hold events
 * back), never buffered by nginx (`X-Accel-Buffering`); then the stream writes the rest.
 */
function sendStream(
  res: ServerResponse,
  reply: Reply,
  contextHeaders: readonly string[],
  stream: (res: ServerResponse) => void,
): void {
  const headers = [
    'content-type',
    'text/event-stream',
    'cache-control',
    'no-store, no-transform',
    'x-content-type-options',
    'nosniff',
    ...contextHeaders,
  ];
  if (reply.headers !== undefined) for (const name in reply.headers) headers.push(name, reply.headers[name] as string);
  headers.push('x-accel-buffering', 'no');
  res.writeHead(200, headers);
  stream(res);
}

/**
 * The one place where an error becomes a response. Known errors keep their status and say what was
 * wrong; anything else is a 500 whose message reveals nothing. `serverFault` tells the caller to log
 * the real error: the client did not cause it.
 */
export function errorReply(error: unknown): Reply & { body: string; code: ErrorCode; serverFault: boolean } {
  const http = toHttpError(error);
  const body = JSON.stringify({ code: http.code, message: http.message, status: http.status });
  // An HttpError is an answer the code chose (a 503 from /readyz on a full disk): not a fault to log.
  return {
    status: http.status,
    body,
    headers: http.headers,
    code: http.code,
    serverFault: http.status >= 500 && !(error instanceof HttpError),
  };
}

function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof ValidationError) return new HttpError(400, 'invalid_request', error.message);
  if (error instanceof JsonSyntaxError)
    return new HttpError(400, 'invalid_request', `request body is not valid JSON: ${error.message}`);
  if (error instanceof IdempotencyKeyReusedError) return new HttpError(422, 'idempotency_key_reused', error.message);
  if (error instanceof RequestInProgressError)
    return new HttpError(409, 'request_in_progress', error.message, { 'retry-after': '1' });
  if (error instanceof IdempotencyKeyLimitError)
    return new HttpError(429, 'too_many_idempotency_keys', error.message, { 'retry-after': String(error.retryAfter) });
  if (error instanceof StoreUnavailableError) {
    const message =
      error.operation === 'read'
        ? 'the pets cannot be read right now; try again later'
        : 'the pet could not be made durable and is not acknowledged; try again later';
    return new HttpError(503, 'unavailable', message, { 'retry-after': '1' });
  }
  return new HttpError(500, 'internal_error', 'the server failed to handle the request');
}

/**
 * The raw response to a request Node's parser refused before any handler ran (`clientError`): the
 * status Node would have sent (431 for oversized headers, 408 for a timeout, 400 otherwise), now with
 * the Error body and the base headers.
 */
export function clientErrorResponse(code: string | undefined): string {
  const error =
    code === 'HPE_HEADER_OVERFLOW'
      ? new HttpError(431, 'headers_too_large', 'the request headers are too large')
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new HttpError(408, 'request_timeout', 'the request was not received in time')
        : new HttpError(400, 'invalid_request', 'the request is not valid HTTP/1.1');
  return rawErrorResponse(error);
}

/** An Error response as bytes for a bare socket, which is then closed (no ServerResponse exists). */
export function rawErrorResponse(error: HttpError): string {
  const reply = errorReply(error);
  const headers = Object.entries({ ...BASE_HEADERS, ...reply.headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  const reason = STATUS_CODES[reply.status] ?? '';
  return (
    `HTTP/1.1 ${reply.status} ${reason}\r\n${headers}content-length: ` +
    `${Buffer.byteLength(reply.body)}\r\nconnection: close\r\n\r\n${reply.body}`
  );
}

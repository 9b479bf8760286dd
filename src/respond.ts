import type { ServerResponse } from 'node:http';
import { HttpError } from './http-error.js';
import { JsonSyntaxError } from './json.js';
import { StoreUnavailableError } from './store/store.js';
import { ValidationError } from './validate.js';

/** What a handler answers: the body is already JSON text, so sending cannot fail half-way. */
export interface Reply {
  status: number;
  body: string;
  headers?: Readonly<Record<string, string>> | undefined;
}

/** Headers on every response: JSON, never cached, never sniffed as something else. */
const BASE_HEADERS = {
  'content-type': 'application/json',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
} as const;

export function json(status: number, body: string, headers?: Readonly<Record<string, string>>): Reply {
  return { status, body, headers };
}

/** Writes a reply with its length, the base headers, and the headers of the request's context. */
export function send(res: ServerResponse, reply: Reply, contextHeaders: Readonly<Record<string, string>>): void {
  const headers: Record<string, string | number> = { ...BASE_HEADERS, ...contextHeaders, ...reply.headers };
  headers['content-length'] = Buffer.byteLength(reply.body);
  res.writeHead(reply.status, headers);
  res.end(reply.body);
}

/**
 * The one place where an error becomes a response. Known errors keep their status and say what was
 * wrong; anything else is a 500 whose message reveals nothing (the caller logs the real error).
 */
export function errorReply(error: unknown): Reply {
  const http = toHttpError(error);
  const body = JSON.stringify({ code: http.code, message: http.message, status: http.status });
  return { status: http.status, body, headers: http.headers };
}

export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof ValidationError) return new HttpError(400, 'invalid_request', error.message);
  if (error instanceof JsonSyntaxError) return new HttpError(400, 'invalid_request', `request body is not valid JSON: ${error.message}`);
  if (error instanceof StoreUnavailableError) return new HttpError(503, 'unavailable', 'the pet store cannot store data right now; try again later', { 'retry-after': '1' });
  return new HttpError(500, 'internal_error', 'the server failed to handle the request');
}

/** True for errors the client did not cause and the operator should see. */
export function isServerFault(error: unknown): boolean {
  return toHttpError(error).status >= 500;
}

import type { IncomingMessage } from 'node:http';
import { headerCount } from './headers.js';
import { HttpError } from './http-error.js';

const MAX_LENGTH = 255;
// A bare key: visible ASCII only. Inside an RFC 8941 String a space is allowed too.
const BARE = /^[\x21-\x7e]+$/;
const QUOTED = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;

/**
 * The `Idempotency-Key` of a request (draft-ietf-httpapi-idempotency-key-header): an RFC 8941 String
 * (`"…"`), or the key sent bare, as many clients send UUIDs. Undefined when absent; anything else,
 * the header given twice included, is a 400 naming the header.
 */
export function idempotencyKey(req: IncomingMessage): string | undefined {
  const value = req.headers['idempotency-key'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || headerCount(req, 'idempotency-key') > 1) throw invalid('is given more than once');
  const raw = value;
  const quoted = raw.startsWith('"') ? QUOTED.exec(raw) : null;
  if (raw.startsWith('"') && quoted === null) throw invalid('is not a valid structured-field string');
  const key = quoted === null ? raw : (quoted[1] as string).replace(/\\(["\\])/g, '$1');
  if (key.length === 0 || key.length > MAX_LENGTH || (quoted === null && !BARE.test(key))) {
    throw invalid(`must be 1 to ${MAX_LENGTH} visible ASCII characters (a space only inside quotes)`);
  }
  return key;
}

function invalid(why: string): HttpError {
  return new HttpError(400, 'invalid_request', `the Idempotency-Key header ${why}`);
}

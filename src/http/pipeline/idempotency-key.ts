import type { IncomingMessage } from 'node:http';
import { headerCount } from './headers.js';
import { HttpError } from '../http-error.js';

const MAX_LENGTH = 255;
// A bare key: visible ASCII only. Inside an RFC 8941 String a space is allowed too.
const BARE = /^[\x21-\x7e]+$/;
// RFC 8941 §3.3.3 String, §3.1.2 Parameters (`;` *SP key [ "=" bare-item ]) and §3.3 bare items:
// Decimal, Integer, String, Token, Byte Sequence, Boolean.
const STRING = String.raw`"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*"`;
const PARAMETER_KEY = '[a-z*][a-z0-9_.*-]*';
const BARE_ITEM =
  String.raw`(?:-?[0-9]{1,12}\.[0-9]{1,3}|-?[0-9]{1,15}|${STRING}|` +
  String.raw`[A-Za-z*][!#$%&'*+.^_\`|~0-9A-Za-z:/-]*|:[A-Za-z0-9+/=]*:|\?[01])`;
const QUOTED = new RegExp(`^(${STRING})(?:;\\x20*${PARAMETER_KEY}(?:=${BARE_ITEM})?)*$`);

/**
 * The `Idempotency-Key` of a request (draft-ietf-httpapi-idempotency-key-header): an RFC 8941 String
 * (`"…"`), whose parameters are checked and ignored, or the key sent bare, as many clients send
 * UUIDs. Undefined when absent; anything else, the header given twice included, is a 400 naming the header.
 */
export function idempotencyKey(req: IncomingMessage): string | undefined {
  const value = req.headers['idempotency-key'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || headerCount(req, 'idempotency-key') > 1) throw invalid('is given more than once');
  const raw = value;
  const quoted = raw.startsWith('"') ? QUOTED.exec(raw) : null;
  if (raw.startsWith('"') && quoted === null)
    throw invalid('is not a valid structured-field string (with optional ;parameters)');
  const key = quoted === null ? raw : (quoted[1] as string).slice(1, -1).replace(/\\(["\\])/g, '$1');
  if (key.length === 0 || key.length > MAX_LENGTH || (quoted === null && !BARE.test(key))) {
    throw invalid(`must be 1 to ${MAX_LENGTH} visible ASCII characters (a space only inside quotes)`);
  }
  return key;
}

function invalid(why: string): HttpError {
  return new HttpError(400, 'invalid_request', `the Idempotency-Key header ${why}`);
}

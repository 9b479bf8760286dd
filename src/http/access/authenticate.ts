import type { IncomingMessage } from 'node:http';
import { AUTH_REALM } from '../../pet/contract.js';
import { clientKey, type AuthLimiter } from '../../auth/limiter.js';
import { monotonicMs } from '../../lib/monotonic.js';
import { headerCount } from '../pipeline/headers.js';
import { HttpError, type ErrorCode } from '../http-error.js';
import type { RememberedKeys } from './remembered-key.js';
import type { AcceptedKey } from '../../auth/keyring.js';

const CHALLENGE = { 'www-authenticate': `Bearer realm="${AUTH_REALM}"` };

/** Why a request is refused at authentication: a fixed set, which metrics count by. */
export const AUTH_FAILURES = [
  'missing_key',
  'not_bearer',
  'unknown_key',
  'repeated_header',
  'address_blocked',
] as const;
export type AuthFailure = (typeof AUTH_FAILURES)[number];

/** The HttpError of a refused authentication, saying which of AUTH_FAILURES it was. */
export class AuthenticationError extends HttpError {
  constructor(
    readonly reason: AuthFailure,
    status: number,
    code: ErrorCode,
    message: string,
    headers: Record<string, string> = {},
  ) {
    super(status, code, message, headers);
  }
}
// RFC 6750: the scheme name is case-insensitive; the token is matched exactly.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * Lets a request through only with an accepted bearer key, and returns that key. A client address (the peer, or the one
 * a trusted proxy names) with too many recent failures is refused (429) before its key is even looked at. `keys` is
 * the service's keyring, with the key each of its connections was last accepted as.
 */
export function authenticate(
  req: IncomingMessage,
  client: string,
  keys: RememberedKeys,
  limiter: AuthLimiter,
): AcceptedKey {
  const address = clientKey(client);
  // Monotonic: a block ends a minute after it began, however the wall clock is set meanwhile.
  const now = monotonicMs();
  const wait = limiter.blockedFor(address, now);
  if (wait > 0) {
    throw new AuthenticationError(
      'address_blocked',
      429,
      'too_many_requests',
      'too many failed authentications from this address',
      { 'retry-after': String(wait) },
    );
  }
  const header = req.headers.authorization;
  if (header === undefined)
    throw new AuthenticationError(
      'missing_key',
      401,
      'unauthorized',
      'missing bearer API key (Authorization: Bearer <key>)',
      CHALLENGE,
    );
  if (headerCount(req, 'authorization') > 1)
    throw new AuthenticationError(
      'repeated_header',
      400,
      'invalid_request',
      'the Authorization header is given more than once',
    );
  const known = keys.find(req.socket, header, now);
  if (known !== undefined) return known;
  const token = BEARER.exec(header)?.[1];
  if (token === undefined)
    throw new AuthenticationError(
      'not_bearer',
      401,
      'unauthorized',
      'the Authorization header is not a bearer API key',
      CHALLENGE,
    );
  const key = keys.keyring.identify(token, now);
  if (key === undefined) {
    // Only a presented key that is wrong counts as a guess: a browser's keyless request for
    // /favicon.ico behind the same proxy must not lock out the clients that have a key.
    limiter.recordFailure(address, now);
    throw new AuthenticationError('unknown_key', 401, 'unauthorized', 'invalid API key', CHALLENGE);
  }
  keys.remember(req.socket, header, key);
  return key;
}

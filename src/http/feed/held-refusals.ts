/** Why the feed does not hold a stream or a waiting request: answers of their own, which metrics count by name. */
import { AUTH_REALM } from '../../pet/contract.js';
import { HttpError } from '../http-error.js';

/**
 * The 503 of a request refused because the feed holds `--max-streams` already: a limit, which metrics count by name.
 */
export class HeldLimitError extends HttpError {
  constructor(maxHeld: number) {
    super(
      503,
      'unavailable',
      `this server holds ${maxHeld} event streams and waiting requests, the most it keeps open; retry after ` +
        `Retry-After seconds`,
      { 'retry-after': '5' },
    );
  }
}

/**
 * The 429 of a stream or wait refused because its API key holds --max-streams-per-key already: the others' are not
 * refused.
 */
export class KeyHeldLimitError extends HttpError {
  constructor(maxPerKey: number) {
    super(
      429,
      'too_many_streams',
      `this API key holds ${maxPerKey} event streams and waiting requests, the most one key may; end one, or retry ` +
        `after Retry-After seconds`,
      { 'retry-after': '5' },
    );
  }
}

/**
 * What a request still waiting (or a stream still opening) is answered when its key is revoked: the 401 a new request
 * with the key gets.
 */
export const revokedError = (): HttpError =>
  new HttpError(401, 'unauthorized', 'this API key was revoked while the request waited', {
    'www-authenticate': `Bearer realm="${AUTH_REALM}"`,
  });

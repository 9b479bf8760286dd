import type { IncomingMessage } from 'node:http';
import { isIPv6 } from 'node:net';
import { headerCount } from './headers.js';
import { HttpError } from '../http-error.js';

// RFC 3986 §3.2.2: a reg-name (which covers IPv4 addresses too) or an IP literal, then an optional port.
const NAME_HOST = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+(?::[0-9]*)?$/;
const LITERAL_HOST = /^\[([0-9A-Fa-f:.]+)\](?::[0-9]*)?$/;

/**
 * Headers a request may have. Node's server keeps the first 1,000 by default (its parser counts
 * 2,000 names and values, not the 2,000 headers its documentation says) and drops the rest unseen:
 * a second Authorization behind them would pass as one. A request that reaches that count cannot be
 * known to be whole, so it is refused (431), here in the handler so that an embedder's server is
 * covered too, at the cost of one comparison. (A server whose maxHeadersCount is set below 1,000
 * would drop headers this cannot see.)
 */
const MAX_HEADERS = 999;

/** The 505 for a request line with a version other than HTTP/1.0 or 1.1, from the app or the parser. */
export function versionNotSupported(): HttpError {
  return new HttpError(505, 'http_version_not_supported', 'only HTTP/1.0 and HTTP/1.1 are supported');
}

/**
 * RFC 9112 §2.3 and §3.2: only HTTP/1.0 and 1.1 are served (505); at most MAX_HEADERS headers (431);
 * HTTP/1.1 needs a Host header, and a Host header, when present, is sent once and names a host[:port]
 * (400). Node's parser lets all of these through (its own Host check is off, see listen.ts, so that
 * the answer has the Error body).
 */
export function checkRequestLine(req: IncomingMessage): void {
  if (req.httpVersionMajor !== 1 || req.httpVersionMinor > 1) throw versionNotSupported();
  if (req.rawHeaders.length > 2 * MAX_HEADERS)
    throw new HttpError(431, 'headers_too_large', `the request has more than ${MAX_HEADERS} headers`);
  const host = req.headers.host;
  if (host === undefined) {
    if (req.httpVersionMinor === 1)
      throw new HttpError(400, 'invalid_request', 'an HTTP/1.1 request needs a Host header');
    return;
  }
  if (headerCount(req, 'host') > 1)
    throw new HttpError(400, 'invalid_request', 'the Host header is given more than once');
  if (!validHost(host))
    throw new HttpError(
      400,
      'invalid_request',
      'the Host header must be a host name or address, with an optional port',
    );
}

function validHost(host: string): boolean {
  if (NAME_HOST.test(host)) return true;
  const literal = LITERAL_HOST.exec(host);
  return literal !== null && isIPv6(literal[1] as string);
}

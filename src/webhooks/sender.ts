import { type ClientRequest, request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { AddressRefusedError, guardedLookup, isForbiddenAddress } from './address-policy.js';

/** How one attempt ended: `delivered` is a 2xx in time; `refused` never left this host (address policy). */
export type AttemptResult = 'delivered' | 'failed' | 'timeout' | 'refused';

export interface Attempt {
  result: AttemptResult;
  /** Why, in a few words, for the log: the status, the error code, never a secret or the URL's path. */
  reason: string;
}

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  /** Aborts the attempt at once (a stop). */
  signal: AbortSignal;
}

const USER_AGENT = 'petstore-webhooks/1';

/**
 * POSTs `body` to `url` once. The answer is judged on its status line alone and the connection is
 * then closed: a body is never read, so one that trickles or never ends costs nothing. Redirects are
 * not followed; certificates are verified; the whole attempt, from connect to status, has `timeoutMs`.
 */
export function send(url: URL, headers: Record<string, string>, body: string, options: SendOptions): Promise<Attempt> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // An address literal is connected to without a lookup: checked here instead.
  if (!options.allowPrivate && isIP(host) !== 0 && isForbiddenAddress(host)) {
    return Promise.resolve({ result: 'refused', reason: new AddressRefusedError(host, host).message });
  }
  const requestOptions: RequestOptions & { rejectUnauthorized: boolean } = {
    method: 'POST',
    headers: {
      ...headers,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': USER_AGENT,
    },
    // A connection of its own each time: resolved and checked anew, nothing kept between attempts.
    agent: false,
    maxHeaderSize: 16 * 1024,
    rejectUnauthorized: true,
    signal: options.signal,
  };
  if (!options.allowPrivate) requestOptions.lookup = guardedLookup();
  return new Promise((resolve) => {
    let settled = false;
    const settle = (attempt: Attempt): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(attempt);
    };
    const req: ClientRequest = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, requestOptions, (res) => {
      const status = res.statusCode ?? 0;
      res.on('error', () => {}); // destroyed below, unread: its reset is expected
      settle(
        status >= 200 && status < 300
          ? { result: 'delivered', reason: String(status) }
          : {
              result: 'failed',
              reason: status >= 300 && status < 400 ? `${status} (redirects are not followed)` : String(status),
            },
      );
    });
    const timer = setTimeout(
      () => settle({ result: 'timeout', reason: `no answer within ${options.timeoutMs} ms` }),
      options.timeoutMs,
    );
    req.on('error', (error: Error & { code?: string }) => {
      settle(
        error instanceof AddressRefusedError
          ? { result: 'refused', reason: error.message }
          : { result: 'failed', reason: error.code ?? error.name },
      );
    });
    req.end(body);
  });
}

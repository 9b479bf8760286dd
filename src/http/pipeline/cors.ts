import type { IncomingMessage } from 'node:http';
import type { Reply } from '../respond.js';

/** CORS is off unless origins are configured: `*`, or a comma-separated list of exact origins. */
export interface CorsPolicy {
  origins: readonly string[] | '*';
}

export function corsPolicy(setting: string | undefined): CorsPolicy | undefined {
  if (setting === undefined || setting.trim() === '') return undefined;
  if (setting.trim() === '*') return { origins: '*' };
  return {
    origins: setting
      .split(',')
      .map((o) => o.trim())
      .filter((o) => o !== ''),
  };
}

// Headers a browser script may read: pagination, the created pet, the deprecation notice, a replay,
// the key's quota, what a 403 says the key lacks, and the page's tag.
const EXPOSED =
  'Link, Location, Deprecation, Sunset, Retry-After, X-Request-Id, Idempotent-Replayed, RateLimit-Policy, RateLimit, ' +
  'WWW-Authenticate, ETag';

function allowedOrigin(policy: CorsPolicy, req: IncomingMessage): string | undefined {
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  if (policy.origins === '*') return '*';
  return policy.origins.includes(origin) ? origin : undefined;
}

/** The CORS response headers for this request, as name/value pairs. */
export function corsHeaders(policy: CorsPolicy, req: IncomingMessage): string[] {
  const origin = allowedOrigin(policy, req);
  const vary = policy.origins === '*' ? [] : ['vary', 'Origin'];
  if (origin === undefined) return vary;
  return [...vary, 'access-control-allow-origin', origin, 'access-control-expose-headers', EXPOSED];
}

/** A preflight (OPTIONS with Access-Control-Request-Method) from an allowed origin: 204, no key needed. */
export function preflightReply(
  policy: CorsPolicy,
  req: IncomingMessage,
  allowed: readonly string[],
): Reply | undefined {
  if (req.headers['access-control-request-method'] === undefined || allowedOrigin(policy, req) === undefined)
    return undefined;
  return {
    status: 204,
    body: '',
    headers: {
      'access-control-allow-methods': allowed.join(', '),
      // If-None-Match and Last-Event-ID: a script's conditional GET, and the resume of a stream read with fetch().
      'access-control-allow-headers':
        'Authorization, Content-Type, X-Request-Id, Idempotency-Key, If-None-Match, Last-Event-ID',
      'access-control-max-age': '600',
    },
  };
}

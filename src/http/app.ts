import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthLimiter } from '../auth/limiter.js';
import { authenticate } from './access/authenticate.js';
import { authorize, type Quotas } from './access/authorize.js';
import { clientAddress, type TrustedProxies } from './access/client-address.js';
import { bodyToCome } from './body.js';
import { deprecationHeaders } from '../pet/contract.js';
import { corsHeaders, preflightReply, type CorsPolicy } from './pipeline/cors.js';
import type { Feed } from './feed/feed.js';
import { HttpError } from './http-error.js';
import type { AcceptedKey, Keyring } from '../auth/keyring.js';
import type { Logger } from '../lib/logger.js';
import type { Handler } from './operations.js';
import { errorReply, send, type Reply } from './respond.js';
import { acceptableRequestId, newRequestId } from './pipeline/request-id.js';
import type { Mount } from './mount.js';
import { monotonicMs } from '../lib/monotonic.js';
import { oneLine } from '../lib/system-error.js';
import { checkRequestLine } from './pipeline/request-line.js';
import { Router, type Match } from './router.js';
import type { RequestMetrics } from './pipeline/request-metrics.js';
import { servedRoutes, type RouteSpec } from './routes.js';
import { type PetStore, StoreUnavailableError } from '../store/store.js';
import { traceContext } from './pipeline/trace-context.js';
import { splitTarget } from './url.js';
import type { WriteBatch } from './connections/write-batch.js';
import { RememberedKeys } from './access/remembered-key.js';

export interface AppOptions {
  store: PetStore;
  keyring: Keyring;
  limiter: AuthLimiter;
  bodyLimit: number;
  logger: Logger;
  cors: CorsPolicy | undefined;
  mount: Mount;
  /** Where each answered request is measured; undefined: metrics are off, and requests pay nothing for them. */
  metrics?: RequestMetrics | undefined;
  quotas: Quotas;
  /** Waiting requests and event streams (feed.ts). */
  feed: Feed;
  /** `--trust-proxy`: whose X-Forwarded-For or Forwarded names the client; undefined: the peer is the client. */
  trustProxy?: TrustedProxies | undefined;
  /** Where this service's answers are held until the end of their turn (write-batch.ts). */
  batch: WriteBatch;
}

/** Who sent a request, once its key is accepted: the log line of an error answer names the key's id. */
interface Caller {
  key: AcceptedKey | undefined;
  /** Its address (client-address.ts): what the failed-key limit counts and the log names. */
  client: string;
}

/** A standard request listener; with `next`, requests for paths it does not serve go on to `next`. */
export type RequestListener = (req: IncomingMessage, res: ServerResponse, next?: () => void) => void;

/**
 * What createApp works out once: from the mount, the routes as data and the texts its answers repeat;
 * and the keys its connections presented.
 */
interface Served {
  router: Router<RouteSpec>;
  /** Paths that answer without a key (the interface description, health). */
  publicPaths: Set<string>;
  /** The deprecation headers of the unversioned paths, as name/value pairs. */
  deprecationPairs: string[];
  noSuchPath: string;
  /** The keys this service's connections presented: one embedded beside it has other keys. */
  remembered: RememberedKeys;
}

function served(mount: Mount, remembered: RememberedKeys): Served {
  const router = new Router<RouteSpec>();
  const routes = servedRoutes(mount);
  for (const route of routes) router.add(route.method, mount.root + route.path, route);
  return {
    router,
    publicPaths: new Set(routes.filter((r) => !r.auth).map((r) => mount.root + r.path)),
    deprecationPairs: Object.entries(deprecationHeaders(mount.base)).flat(),
    noSuchPath: `no such path; see ${mount.base}/openapi.json for the paths this service serves`,
    remembered,
  };
}

/**
 * The request pipeline, in one direction: route → (preflight) → authenticate → quota and scope →
 * 404/405 → handler → reply. Every outcome, answer or error, leaves through `answer`, which holds it
 * for the end of the turn (write-batch.ts), then through `finish`, which sends and records it.
 */
export function createApp(options: AppOptions): RequestListener {
  const table = served(options.mount, new RememberedKeys(options.keyring));
  const { router, deprecationPairs } = table;

  return function petstore(req, res, next) {
    // Its [seconds, nanoseconds] form (lib/monotonic.ts): a bigint a call costs more, twice a request.
    const started = monotonicMs();
    const clientId = req.headers['x-request-id'];
    const requestId = acceptableRequestId(clientId) ? clientId : newRequestId();
    const { path, search } = splitTarget(req.url ?? '/');
    const method = req.method ?? '';
    const match = router.find(method, path);
    if (next !== undefined && (match.path === undefined || match.value?.embedderFirst === true)) return next();

    // Headers every response of this request carries, whatever the outcome, as name/value pairs.
    const context: string[] = ['x-request-id', requestId];
    if (match.value?.deprecated === true) context.push(...deprecationPairs);
    if (options.cors !== undefined) context.push(...corsHeaders(options.cors, req));
    const client =
      options.trustProxy === undefined
        ? (req.socket.remoteAddress ?? 'unknown')
        : clientAddress(req, options.trustProxy);
    const caller: Caller = { key: undefined, client };

    const finish = (reply: Reply, code?: string): void => {
      try {
        send(res, reply, context, req.headers['accept-encoding']);
      } catch (sendError) {
        // Nothing more can be told to this client (its connection is gone or already answered);
        // a throw here would otherwise become an unhandled rejection that ends the process.
        options.logger.error('could not send the response', sendError, { id: requestId, method, path });
        res.destroy();
      }
      record(options, req, requestId, method, path, match.path, caller, reply, code, started);
    };
    const fail = (error: unknown): void => {
      options.metrics?.failed(error);
      const reply = errorReply(error);
      if (reply.serverFault) {
        // A store that cannot be used is expected while it lasts (a 503 each): one line, no stack.
        const logged = error instanceof StoreUnavailableError ? oneLine(error) : error;
        options.logger.error('request failed', logged, { id: requestId, method, path: match.path ?? path });
      }
      answer(options.batch, finish, req, context, reply, reply.code);
    };

    try {
      const reply = dispatch(options, table, req, res, method, match, search, context, caller);
      if (reply instanceof Promise) reply.then((made) => answer(options.batch, finish, req, context, made), fail);
      else answer(options.batch, finish, req, context, reply);
    } catch (error) {
      fail(error);
    }
  };
}

/**
 * An answer goes out with the others of its turn (write-batch.ts); an event stream's head at once:
 * its writer starts with the head, and a stream ended in between (a stop, a revoked key) would be
 * started after its end and never close (held-answers.test.ts).
 */
function answer(
  batch: WriteBatch,
  finish: (reply: Reply, code?: string) => void,
  req: IncomingMessage,
  context: string[],
  reply: Reply,
  code?: string,
): void {
  // Refused before its body was read: the rest of it would hold the connection, and its slot, for
  // as long as the client takes to trickle it. The connection closes after the answer instead.
  // Decided now, as the answer is made: a body arriving while it is held changes nothing.
  if (reply.status >= 400 && reply.headers?.connection === undefined && bodyToCome(req))
    context.push('connection', 'close');
  if (reply.stream === undefined) batch.atTurnEnd(finish, reply, code);
  else finish(reply, code);
}

/** Decides the reply: preflight, key, quota and scope, 404/405, then the route's handler. */
function dispatch(
  options: AppOptions,
  table: Served,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
  match: Match<RouteSpec>,
  search: string,
  context: string[],
  caller: Caller,
): Reply | Promise<Reply> {
  const { path, value: route, allowed, params } = match;
  checkRequestLine(req);
  if (options.cors !== undefined && path !== undefined && method === 'OPTIONS') {
    const preflight = preflightReply(options.cors, req, allowed);
    if (preflight !== undefined) return preflight;
  }
  // Authentication comes first, also for unknown paths and wrong methods: nothing is revealed without
  // a key. Paths that are public (the interface description, health) answer a wrong method without one.
  const needsKey = route?.auth ?? (path === undefined || !table.publicPaths.has(path));
  const key = needsKey ? authenticate(req, caller.client, table.remembered, options.limiter) : undefined;
  if (key !== undefined) {
    caller.key = key;
    authorize(key, route?.scope, options.quotas, context);
  }
  if (path === undefined) throw new HttpError(404, 'not_found', table.noSuchPath);
  if (route === undefined) {
    throw new HttpError(
      405,
      'method_not_allowed',
      `method ${method} is not allowed here; allowed: ${allowed.join(', ')}`,
      { allow: allowed.join(', ') },
    );
  }
  const handler: Handler = route.handler;
  return handler({
    req,
    res,
    params,
    search,
    store: options.store,
    feed: options.feed,
    bodyLimit: options.bodyLimit,
    mount: options.mount,
    scope: key?.identity,
    keyId: key?.id,
  });
}

/** Logs and measures an answered request, once it is sent. */
function record(
  options: AppOptions,
  req: IncomingMessage,
  id: string,
  method: string,
  path: string,
  route: string | undefined,
  caller: Caller,
  reply: Reply,
  code: string | undefined,
  started: number,
): void {
  const nanos = Math.round((monotonicMs() - started) * 1e6);
  // Read only when sent: a request without one makes no call for it.
  const traceparent = req.headers.traceparent;
  const trace = traceparent === undefined ? undefined : traceContext(traceparent);
  try {
    options.logger.request({
      id,
      method,
      path,
      status: reply.status,
      ms: Math.round(nanos / 1e4) / 100,
      client: caller.client,
      code,
      keyId: code === undefined ? undefined : caller.key?.id,
      traceId: trace?.traceId,
      spanId: trace?.spanId,
    });
    options.metrics?.observe(route, method, reply, nanos);
  } catch (recordError) {
    // An embedder's logger that fails once must not end the process: the answer has gone out.
    options.logger.error('could not record the request', recordError, { id, method, path });
  }
}

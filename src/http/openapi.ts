import {
  API_VERSION,
  AUTH_REALM,
  BASE_PATH,
  DEPRECATION,
  deprecationHeaders,
  LIMIT,
  NAME_MAX_LENGTH,
  PET_STATUSES,
  WAIT_SECONDS,
} from '../pet/contract.js';
import { QUOTA_POLICY_NAME } from './access/authorize.js';
import type { Mount } from './mount.js';
import { ERROR_CODES } from './http-error.js';
import type { Json, RouteSpec } from './route-spec.js';

export type { Json } from './route-spec.js';

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: a parameter, a header or the body is missing or invalid (the message names it)',
  401: 'API key missing or invalid',
  403:
    'The API key does not hold the scope this operation needs (insufficient_scope); WWW-Authenticate names it. ' +
    'Nothing was done',
  404: 'The requested pet does not exist',
  409: 'A create with the same Idempotency-Key is still being processed; retry after Retry-After seconds',
  413: 'Request body larger than the configured limit (default 64 KiB)',
  415: 'Request body is not application/json',
  422: 'The Idempotency-Key was already used, within its window, for a different pet',
  429:
    "This API key's quota is used up (rate_limited; RateLimit says r=0 and when it is whole again), too many failed " +
    'authentications from this address (too_many_requests), ' +
    'or, on createPet with an Idempotency-Key, as many keys remembered for this API key as the server keeps ' +
    '(too_many_idempotency_keys); retry after Retry-After seconds',
  500: 'Unexpected server failure; the message reveals nothing',
  503: 'The store cannot be used right now, or the server is stopping',
};

export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const header = (name: string): Json => ({ $ref: `#/components/headers/${name}` });

/**
 * The OpenAPI 3.1 description of exactly what the server does, generated from the route table and
 * the contract constants that the handlers and validators use.
 */
export function openApiDocument(routes: readonly RouteSpec[], mount: Mount): Json {
  const paths: Record<string, Json> = {};
  // Paths outside /v1 (health) are relative to the mount root, not to the API's base. OpenAPI appends
  // a path to its server's URL as it is, so the root has no trailing "/" ("/" + "/healthz" would be
  // "//healthz", another host): '' unmounted, the same origin as the document.
  const rootServers =
    mount.publicUrls.length === 0
      ? [{ url: mount.root }]
      : mount.publicUrls.map((url) => ({ url: url.slice(0, -BASE_PATH.length) }));
  for (const route of routes) {
    const inV1 = route.path.startsWith(`${BASE_PATH}/`);
    const key = (inV1 ? route.path.slice(BASE_PATH.length) : route.path).replace(/:(\w+)/g, '{$1}');
    const item = (paths[key] ??= inV1 ? {} : { servers: rootServers });
    item[route.method.toLowerCase()] = operation(route, mount);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Pet Store API',
      version: API_VERSION,
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        `List, add and get pets. Every operation under ${mount.base} but this document requires a bearer ` +
        `API key. HEAD is answered wherever GET is, with the same status and headers and no body.`,
    },
    servers: mount.publicUrls.length === 0 ? [{ url: mount.base }] : mount.publicUrls.map((url) => ({ url })),
    security: [{ bearerAuth: [] }],
    paths,
    components: { securitySchemes, schemas, headers: headers(mount), parameters },
  };
}

function operation(route: RouteSpec, mount: Mount): Json {
  const op: Json = { operationId: route.operationId, summary: route.summary };
  if (route.deprecated === true) {
    op.deprecated = true;
    const sunset = DEPRECATION.sunset.toUTCString();
    op.description = `Deprecated; removed on ${sunset}. Use ${mount.base}/pets with the status filter.`;
  }
  // OpenAPI 3.1 lets a requirement of a non-OAuth scheme list role names: here the scope the key needs.
  op.security = route.auth ? [{ bearerAuth: [route.scope] }] : [];
  const { parameters = [], body } = route.doc;
  if (parameters.length > 0) op.parameters = parameters.map((name) => ({ $ref: `#/components/parameters/${name}` }));
  if (body !== undefined) op.requestBody = { required: true, content: { 'application/json': { schema: ref(body) } } };
  const responses: Record<string, Json> = {};
  for (const status of route.statuses) responses[String(status)] = response(route, status);
  responses.default = {
    description:
      'Any other error, with the Error body: 405 (with Allow) for a method the path does not have, ' +
      '400 for a request that is not valid HTTP/1.1 (a missing, repeated or invalid Host included), 408, 417, 431, ' +
      '505 for an HTTP version other than 1.0 and 1.1, or 500',
    headers: { 'X-Content-Type-Options': header('X-Content-Type-Options'), 'Cache-Control': header('Cache-Control') },
    content: { 'application/json': { schema: ref('Error') } },
  };
  op.responses = responses;
  return op;
}

function response(route: RouteSpec, status: number): Json {
  const responseHeaders: Record<string, Json> = {
    'X-Request-Id': header('X-Request-Id'),
    'Cache-Control': header('Cache-Control'),
    'X-Content-Type-Options': header('X-Content-Type-Options'),
  };
  if (route.deprecated === true) {
    responseHeaders.Deprecation = header('Deprecation');
    responseHeaders.Sunset = header('Sunset');
    responseHeaders.Link = header('SuccessorLink');
  }
  if (status === 401) responseHeaders['WWW-Authenticate'] = header('WWW-Authenticate');
  if (status === 403)
    responseHeaders['WWW-Authenticate'] = {
      description: 'RFC 6750 §3.1: the scope this operation needs',
      schema: { type: 'string', const: challenge(route) },
    };
  if (status === 429) responseHeaders['Retry-After'] = header('Retry-After');
  // An answer to a request whose key was accepted, when a quota applies to the key.
  if (route.auth && status !== 401) {
    responseHeaders['RateLimit-Policy'] = header('RateLimit-Policy');
    responseHeaders.RateLimit = header('RateLimit');
  }
  for (const name of route.doc.responseHeaders?.[status] ?? []) responseHeaders[name] = header(name);
  if (status === 304) return { description: NOT_MODIFIED, headers: responseHeaders };
  const success = status < 400;
  const schema = success ? route.doc.success.schema : ref('Error');
  const description = success
    ? route.doc.success.description
    : (route.doc.errors?.[status] ?? ERROR_DESCRIPTIONS[status] ?? 'Error');
  const content: Json = {
    [success ? (route.doc.success.mediaType ?? 'application/json') : 'application/json']: { schema },
  };
  if (success && route.doc.success.eventStream !== undefined) {
    content['text/event-stream'] = route.doc.success.eventStream;
    responseHeaders['Cache-Control'] = header('StreamCacheControl');
    responseHeaders['X-Accel-Buffering'] = header('X-Accel-Buffering');
  }
  return { description, headers: responseHeaders, content };
}

const challenge = (route: RouteSpec): string =>
  `Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="${route.scope}"`;

const NOT_MODIFIED =
  "Not modified: If-None-Match holds this answer's ETag, so the client has it already. No body; ETag, Vary and " +
  'Cache-Control as the 200 would have them';

const int64 = { type: 'integer', format: 'int64' };

const securitySchemes = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    description:
      `API key as a bearer token (realm "${AUTH_REALM}"). A key holds scopes: pets:read (listPets, getPet) and ` +
      `pets:write (createPet); ` +
      "each operation's security requirement names the one it needs, and a key without it gets 403 " +
      'insufficient_scope. ' +
      'A key may be under a quota: its answers then carry RateLimit-Policy and RateLimit, and past the quota 429 ' +
      'rate_limited with Retry-After.',
  },
};

const schemas = {
  PetStatus: { type: 'string', enum: [...PET_STATUSES], description: 'Omit the field for no status; null is refused' },
  NewPet: {
    type: 'object',
    required: ['name', 'categoryId'],
    additionalProperties: false,
    properties: {
      name: { type: 'string', minLength: 1, maxLength: NAME_MAX_LENGTH },
      categoryId: {
        ...int64,
        description:
          'Any int64, written as a plain integer (no fraction, no exponent, not -0); kept and returned with every ' +
          'digit',
      },
      status: ref('PetStatus'),
    },
  },
  Pet: {
    type: 'object',
    required: ['id', 'name', 'categoryId'],
    additionalProperties: false,
    properties: {
      id: { ...int64, minimum: 1, description: 'Assigned by the service: 1, 2, 3, … never reused' },
      name: { type: 'string', minLength: 1, maxLength: NAME_MAX_LENGTH },
      categoryId: int64,
      status: ref('PetStatus'),
    },
  },
  Pets: { type: 'array', items: ref('Pet') },
  Error: {
    type: 'object',
    required: ['code', 'message', 'status'],
    properties: {
      code: { type: 'string', enum: [...ERROR_CODES] },
      message: { type: 'string' },
      status: { type: 'integer', description: 'The HTTP status code of the response' },
    },
  },
};

const parameters = {
  limit: {
    name: 'limit',
    in: 'query',
    required: false,
    description: 'Page size, a plain decimal integer',
    schema: { type: 'integer', minimum: LIMIT.min, maximum: LIMIT.max, default: LIMIT.default },
  },
  status: {
    name: 'status',
    in: 'query',
    required: false,
    description: 'Only pets with this status',
    schema: ref('PetStatus'),
  },
  after: {
    name: 'after',
    in: 'query',
    required: false,
    description: 'Cursor: only pets with an id greater than this (from the Link rel="next" header)',
    schema: int64,
  },
  wait: {
    name: 'wait',
    in: 'query',
    required: false,
    description:
      `Whole seconds an empty page waits for a matching pet (long polling): answered as soon as one is ` +
      `committed, or empty once the time is up. ${WAIT_SECONDS.min} waits not at all`,
    schema: { type: 'integer', minimum: WAIT_SECONDS.min, maximum: WAIT_SECONDS.max, default: WAIT_SECONDS.min },
  },
  lastEventId: {
    name: 'Last-Event-ID',
    in: 'header',
    required: false,
    description:
      'With Accept: text/event-stream: the id of the last event received; the stream resumes after it (it overrides ' +
      'after). EventSource sends it when it reconnects',
    schema: { ...int64, minimum: 0 },
  },
  ifNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description:
      "ETags the client has (weak comparison; * for any): when the answer's ETag is among them, 304 without a body",
    schema: { type: 'string' },
  },
  petId: { name: 'petId', in: 'path', required: true, schema: int64 },
  idempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes a retried create safe (draft-ietf-httpapi-idempotency-key-header): an RFC 8941 String ("…"), whose ' +
      'parameters ' +
      '(;name=value) are allowed and ignored, or the key bare, 1–255 visible ASCII characters (a space only inside ' +
      'quotes). Scoped to the API key; remembered for a window (24 hours by default) ' +
      'after a successful create. The same key with the same pet (name, categoryId digits, status) gets the first ' +
      '201 again with ' +
      'Idempotent-Replayed: true and stores nothing; with another pet, 422; while the first is still being ' +
      'committed, 409. ' +
      'Only a 201 is remembered.',
    schema: { type: 'string', minLength: 1 },
  },
};

const headers = (mount: Mount): Json => ({
  'X-Request-Id': {
    description: "The request id: the client's X-Request-Id when valid, otherwise generated",
    schema: { type: 'string' },
  },
  'Cache-Control': { schema: { type: 'string', const: 'no-store' } },
  StreamCacheControl: {
    description: 'no-store; on the event stream no-store, no-transform (a compressing proxy would hold events back)',
    schema: { type: 'string', enum: ['no-store', 'no-store, no-transform'] },
  },
  'X-Accel-Buffering': {
    description: 'On the event stream only: no, so that nginx passes each event on without buffering it',
    schema: { type: 'string', const: 'no' },
  },
  'X-Content-Type-Options': { schema: { type: 'string', const: 'nosniff' } },
  Deprecation: {
    description: 'RFC 9745: when getPet was deprecated',
    schema: { type: 'string', const: deprecationHeaders().deprecation },
  },
  Sunset: {
    description: 'RFC 8594: when getPet will be removed',
    schema: { type: 'string', const: deprecationHeaders().sunset },
  },
  SuccessorLink: {
    description: 'RFC 8288: the successor of getPet',
    schema: { type: 'string', const: deprecationHeaders(mount.base).link },
  },
  Link: {
    description: 'RFC 8288 rel="next": the next page, present only when more pets match',
    schema: { type: 'string' },
  },
  Location: { description: `The new pet: ${mount.base}/pets/{id}`, schema: { type: 'string' } },
  'WWW-Authenticate': { schema: { type: 'string', const: `Bearer realm="${AUTH_REALM}"` } },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
  'RateLimit-Policy': {
    description:
      `draft-ietf-httpapi-ratelimit-headers-11, present when a quota applies to the API key: ` +
      `"${QUOTA_POLICY_NAME}";q=<requests>;w=<seconds>, counted per key`,
    schema: { type: 'string', pattern: `^"${QUOTA_POLICY_NAME}";q=[1-9][0-9]*;w=[1-9][0-9]*$` },
  },
  RateLimit: {
    description:
      `draft-ietf-httpapi-ratelimit-headers-11, present when a quota applies to the API key: ` +
      `"${QUOTA_POLICY_NAME}";r=<requests left>;t=<seconds until the quota is whole again, rounded up>`,
    schema: { type: 'string', pattern: `^"${QUOTA_POLICY_NAME}";r=(0|[1-9][0-9]*);t=[1-9][0-9]*$` },
  },
  'Idempotent-Replayed': {
    description: 'Present on a replayed create: the answer of the first request with this Idempotency-Key',
    schema: { type: 'string', const: 'true' },
  },
  ETag: {
    description:
      "Weak entity tag of this answer: of a page, from its query, its last id and whether more follow (a full page's " +
      'never changes); of a pet, from its id. The same for its gzip and plain bytes',
    schema: { type: 'string', pattern: '^W/"[!#-~]+"$' },
  },
  Vary: {
    description: 'Accept-Encoding, on an answer of 1 KiB or more (or one gzip-coded): it could go out compressed',
    schema: { type: 'string', const: 'Accept-Encoding' },
  },
  'Content-Encoding': {
    description: 'gzip, when Accept-Encoding allows it and the answer is 1 KiB or more (or identity is refused)',
    schema: { type: 'string', const: 'gzip' },
  },
});

import { petJson } from '../pet/codec.js';
import { BASE_PATH, EXAMPLE_PET } from '../pet/contract.js';
import { gzip } from './pipeline/compression.js';
import { openApiDocument, ref, type Json } from './openapi.js';
import { createPet, getPet, healthz, listPets, readyz, type Handler } from './operations.js';
import type { Mount } from './mount.js';
import { referencePage } from './reference/reference-page.js';
import { json, type Reply } from './respond.js';
import type { RouteSpec } from './route-spec.js';

export type { RouteSpec } from './route-spec.js';

const READ_UNAVAILABLE =
  'The pets cannot be read right now (the database is away), or the server is stopping; retry after Retry-After ' +
  'seconds';
const LIST_UNAVAILABLE =
  'The pets cannot be read right now (the database is away), the server is stopping, or it holds as many event ' +
  'streams ' +
  'and waiting requests (wait) as it keeps open (--max-streams); retry after Retry-After seconds';
const LIST_UNAUTHORIZED =
  'API key missing or invalid, or, with wait, revoked while the request waited (an event stream of a revoked key ' +
  'ends instead)';
const LIST_TOO_MANY =
  "This API key's quota is used up (rate_limited; RateLimit says r=0 and when it is whole again), too many failed " +
  'authentications from this address ' +
  '(too_many_requests), or, with wait or as an event stream, this API key holds as many event streams and waiting ' +
  'requests as one key may (too_many_streams, ' +
  '--max-streams-per-key); retry after Retry-After seconds';

// What a stream sends: `retry:` once, then an event per pet, heartbeat comments when quiet.
const EVENT_STREAM = {
  schema: {
    type: 'string',
    description:
      'With Accept: text/event-stream: the pets after the cursor (Last-Event-ID, else after) that match status, then ' +
      'each new one as it is ' +
      "committed, until the connection ends or the stream's lifetime is over (--stream-lifetime; then it ends " +
      'cleanly, and the client resumes with Last-Event-ID). First "retry: 1000", then one event per pet: "id: <pet ' +
      'id>", "event: pet", "data: <the pet\'s JSON ' +
      'exactly as getPet answers it>", a blank line. Comments (": heartbeat") keep a quiet stream open. limit and ' +
      'wait do not apply. Never compressed.',
  },
  example: `retry: 1000\n\nid: ${EXAMPLE_PET.id}\nevent: pet\ndata: ${petJson(EXAMPLE_PET)}\n\n: heartbeat\n\n`,
};

const statusSchema = (value: string): Json => ({
  type: 'object',
  required: ['status'],
  properties: { status: { const: value } },
});

// Built on first request for each mount, from the same table it describes, and gzip-coded then, once:
// anyone may ask for it without a key, and compressing it anew for each would let anyone spend the CPU.
const openApiJson = new WeakMap<Mount, { bytes: Buffer; gzipped: Buffer }>();
const serveOpenApi: Handler = (ctx) => {
  let document = openApiJson.get(ctx.mount);
  if (document === undefined) {
    const bytes = Buffer.from(JSON.stringify(openApiDocument(servedRoutes(ctx.mount), ctx.mount)));
    openApiJson.set(ctx.mount, (document = { bytes, gzipped: gzip(bytes, bytes.length) }));
  }
  return { ...json(200, document.bytes), gzipped: document.gzipped };
};

// The reference page, built from the document once per mount, as the document is.
const pages = new WeakMap<Mount, Reply>();
const serveReferencePage: Handler = (ctx) => {
  let page = pages.get(ctx.mount);
  if (page === undefined) {
    const { html, csp } = referencePage(openApiDocument(servedRoutes(ctx.mount), ctx.mount), ctx.mount.base);
    const headers = { 'content-security-policy': csp, 'referrer-policy': 'no-referrer' };
    pages.set(
      ctx.mount,
      (page = { status: 200, body: html, gzipped: gzip(html, html.length), type: 'text/html; charset=utf-8', headers }),
    );
  }
  return page;
};

// `GET /` and `GET /v1`: where to read about the API, rather than a 401 that tells nothing.
const serveIndex: Handler = (ctx) => {
  const links = {
    ...(ctx.mount.docs ? { docs: `${ctx.mount.base}/docs` } : {}),
    openapi: `${ctx.mount.base}/openapi.json`,
  };
  const link = Object.entries(links)
    .map(([rel, href]) => `<${href}>; rel="${rel === 'docs' ? 'help' : 'service-desc'}"`)
    .join(', ');
  return json(200, JSON.stringify(links), { link });
};

const INDEX_DOC = {
  success: {
    description:
      'Where this API is described: docs, the reference page (absent with --docs off), and openapi, this document; ' +
      'the same in Link (rel="help", rel="service-desc")',
    schema: {
      type: 'object',
      properties: { docs: { type: 'string' }, openapi: { type: 'string' } },
      required: ['openapi'],
    },
  },
  responseHeaders: { 200: ['Link'] },
};

/** The routes a mount serves: all of them, but the reference page when it is off. */
export function servedRoutes(mount: Mount): readonly RouteSpec[] {
  return mount.docs ? ROUTES : ROUTES.filter((route) => route.referencePage !== true);
}

export const ROUTES: readonly RouteSpec[] = [
  {
    method: 'GET',
    path: `${BASE_PATH}/pets`,
    operationId: 'listPets',
    summary: 'List pets, wait for new ones, or stream them',
    auth: true,
    scope: 'pets:read',
    statuses: [200, 304, 400, 401, 403, 429, 500, 503],
    handler: listPets,
    doc: {
      parameters: ['limit', 'status', 'after', 'wait', 'lastEventId', 'ifNoneMatch'],
      success: {
        description:
          'Pets in ascending id order; a Link rel="next" header is present when more match. With wait, an empty page ' +
          'is answered once a matching pet is committed, or empty when the time is up',
        schema: ref('Pets'),
        eventStream: EVENT_STREAM,
      },
      responseHeaders: {
        200: ['Link', 'ETag', 'Vary', 'Content-Encoding'],
        304: ['ETag', 'Vary'],
        503: ['Retry-After'],
      },
      errors: { 401: LIST_UNAUTHORIZED, 429: LIST_TOO_MANY, 503: LIST_UNAVAILABLE },
    },
  },
  {
    method: 'POST',
    path: `${BASE_PATH}/pets`,
    operationId: 'createPet',
    summary: 'Add a pet',
    auth: true,
    scope: 'pets:write',
    statuses: [201, 400, 401, 403, 409, 413, 415, 422, 429, 500, 503],
    handler: createPet,
    doc: {
      parameters: ['idempotencyKey'],
      body: 'NewPet',
      success: {
        description:
          'The created pet, with its assigned id; a replay of an earlier create with the same Idempotency-Key ' +
          'carries Idempotent-Replayed: true',
        schema: ref('Pet'),
      },
      responseHeaders: { 201: ['Location', 'Idempotent-Replayed'], 409: ['Retry-After'], 503: ['Retry-After'] },
      errors: {
        503:
          'The pet could not be made durable (a full disk, an I/O error, a database that is away) and is not ' +
          'stored, or the server is stopping; retry after Retry-After seconds',
      },
    },
  },
  {
    method: 'GET',
    path: `${BASE_PATH}/pets/:petId`,
    operationId: 'getPet',
    summary: 'Get a pet (deprecated)',
    auth: true,
    scope: 'pets:read',
    deprecated: true,
    statuses: [200, 304, 400, 401, 403, 404, 429, 500, 503],
    handler: getPet,
    doc: {
      parameters: ['petId', 'ifNoneMatch'],
      success: { description: 'The pet', schema: ref('Pet') },
      responseHeaders: { 200: ['ETag', 'Vary', 'Content-Encoding'], 304: ['ETag', 'Vary'], 503: ['Retry-After'] },
      errors: { 503: READ_UNAVAILABLE },
    },
  },
  {
    method: 'GET',
    path: `${BASE_PATH}/openapi.json`,
    operationId: 'getOpenApi',
    summary: 'This interface description',
    auth: false,
    statuses: [200, 400],
    handler: serveOpenApi,
    doc: {
      success: {
        description: 'The interface description',
        schema: { type: 'object', description: 'This OpenAPI 3.1 document' },
      },
      responseHeaders: { 200: ['Vary', 'Content-Encoding'] },
    },
  },
  {
    method: 'GET',
    path: `${BASE_PATH}/docs`,
    operationId: 'getReferencePage',
    summary: "This API's reference page, with a form to try it",
    auth: false,
    referencePage: true,
    statuses: [200, 400],
    handler: serveReferencePage,
    doc: {
      success: {
        description:
          'An HTML page built from this document; its Content-Security-Policy lets it talk to this server only',
        schema: { type: 'string' },
        mediaType: 'text/html',
      },
      responseHeaders: { 200: ['Vary', 'Content-Encoding'] },
    },
  },
  {
    method: 'GET',
    path: BASE_PATH,
    operationId: 'getApiIndex',
    summary: 'Where the API is described',
    auth: false,
    statuses: [200, 400],
    handler: serveIndex,
    doc: INDEX_DOC,
  },
  {
    method: 'GET',
    path: '/',
    operationId: 'getIndex',
    summary: 'Where the API is described',
    auth: false,
    embedderFirst: true,
    statuses: [200, 400],
    handler: serveIndex,
    doc: INDEX_DOC,
  },
  {
    method: 'GET',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Liveness',
    auth: false,
    statuses: [200, 400],
    handler: healthz,
    doc: { success: { description: 'The process is alive', schema: statusSchema('ok') } },
  },
  {
    method: 'GET',
    path: '/readyz',
    operationId: 'getReadiness',
    summary: 'Readiness: the store is open and writable',
    auth: false,
    statuses: [200, 400, 503],
    handler: readyz,
    doc: {
      success: { description: 'The store is open and writable', schema: statusSchema('ready') },
      errors: {
        503:
          'The store cannot take a write right now (a full disk, I/O errors, a database that is away); 200 again ' +
          'by itself once a write succeeds',
      },
    },
  },
];

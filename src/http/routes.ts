import { BASE_PATH } from '../pet/contract.js';
import { openApiDocument, ref, type Json } from './openapi.js';
import { createPet, getPet, healthz, listPets, readyz, type Handler } from './operations.js';
import type { Mount } from './mount.js';
import { json } from './respond.js';
import type { RouteSpec } from './route-spec.js';

export type { RouteSpec } from './route-spec.js';

const READ_UNAVAILABLE = 'The pets cannot be read right now (the database is away), or the server is stopping; retry after Retry-After seconds';

const statusSchema = (value: string): Json => ({ type: 'object', required: ['status'], properties: { status: { const: value } } });

// Built on first request for each mount, from the same table it describes.
const openApiJson = new WeakMap<Mount, string>();
const serveOpenApi: Handler = (ctx) => {
  let text = openApiJson.get(ctx.mount);
  if (text === undefined) openApiJson.set(ctx.mount, (text = JSON.stringify(openApiDocument(ROUTES, ctx.mount))));
  return json(200, text);
};

export const ROUTES: readonly RouteSpec[] = [
  {
    method: 'GET', path: `${BASE_PATH}/pets`, operationId: 'listPets', summary: 'List pets', auth: true, scope: 'pets:read',
    statuses: [200, 400, 401, 403, 429, 500, 503], handler: listPets,
    doc: {
      parameters: ['limit', 'status', 'after'],
      success: { description: 'Pets in ascending id order; a Link rel="next" header is present when more match', schema: ref('Pets') },
      responseHeaders: { 200: ['Link'], 503: ['Retry-After'] },
      errors: { 503: READ_UNAVAILABLE },
    },
  },
  {
    method: 'POST', path: `${BASE_PATH}/pets`, operationId: 'createPet', summary: 'Add a pet', auth: true, scope: 'pets:write',
    statuses: [201, 400, 401, 403, 409, 413, 415, 422, 429, 500, 503], handler: createPet,
    doc: {
      parameters: ['idempotencyKey'],
      body: 'NewPet',
      success: { description: 'The created pet, with its assigned id; a replay of an earlier create with the same Idempotency-Key carries Idempotent-Replayed: true', schema: ref('Pet') },
      responseHeaders: { 201: ['Location', 'Idempotent-Replayed'], 409: ['Retry-After'], 503: ['Retry-After'] },
      errors: { 503: 'The pet could not be made durable (a full disk, an I/O error, a database that is away) and is not stored, or the server is stopping; retry after Retry-After seconds' },
    },
  },
  {
    method: 'GET', path: `${BASE_PATH}/pets/:petId`, operationId: 'getPet', summary: 'Get a pet (deprecated)', auth: true, scope: 'pets:read',
    deprecated: true, statuses: [200, 400, 401, 403, 404, 429, 500, 503], handler: getPet,
    doc: {
      parameters: ['petId'],
      success: { description: 'The pet', schema: ref('Pet') },
      responseHeaders: { 503: ['Retry-After'] },
      errors: { 503: READ_UNAVAILABLE },
    },
  },
  {
    method: 'GET', path: `${BASE_PATH}/openapi.json`, operationId: 'getOpenApi', summary: 'This interface description',
    auth: false, statuses: [200, 400], handler: serveOpenApi,
    doc: { success: { description: 'The interface description', schema: { type: 'object', description: 'This OpenAPI 3.1 document' } } },
  },
  {
    method: 'GET', path: '/healthz', operationId: 'getHealth', summary: 'Liveness', auth: false,
    statuses: [200, 400], handler: healthz,
    doc: { success: { description: 'The process is alive', schema: statusSchema('ok') } },
  },
  {
    method: 'GET', path: '/readyz', operationId: 'getReadiness', summary: 'Readiness: the store is open and writable',
    auth: false, statuses: [200, 400, 503], handler: readyz,
    doc: {
      success: { description: 'The store is open and writable', schema: statusSchema('ready') },
      errors: { 503: 'The store cannot take a write right now (a full disk, I/O errors, a database that is away); 200 again by itself once a write succeeds' },
    },
  },
];

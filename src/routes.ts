import { BASE_PATH } from './contract.js';
import { openApiDocument } from './openapi.js';
import { createPet, getPet, healthz, listPets, readyz, type Handler } from './operations.js';
import { json } from './respond.js';
import type { Method } from './router.js';

/**
 * Every route of the service, as data. The router is built from this table and so is the OpenAPI
 * document (`openapi.ts`), so a route cannot exist in one and not the other.
 */
export interface RouteSpec {
  method: Method;
  /** Router pattern: `:name` is a path parameter. */
  path: string;
  operationId: string;
  summary: string;
  /** Bearer authentication required (all of `/v1` but the interface description). */
  auth: boolean;
  deprecated?: boolean;
  /** Every status this route answers with, documented in OpenAPI. */
  statuses: readonly number[];
  handler: Handler;
}

// Built on first request, from the same table it describes.
let openApiJson: string | undefined;
const serveOpenApi: Handler = () => json(200, (openApiJson ??= JSON.stringify(openApiDocument(ROUTES))));

export const ROUTES: readonly RouteSpec[] = [
  {
    method: 'GET', path: `${BASE_PATH}/pets`, operationId: 'listPets', summary: 'List pets', auth: true,
    statuses: [200, 400, 401, 429, 500], handler: listPets,
  },
  {
    method: 'POST', path: `${BASE_PATH}/pets`, operationId: 'createPet', summary: 'Add a pet', auth: true,
    statuses: [201, 400, 401, 413, 415, 429, 500, 503], handler: createPet,
  },
  {
    method: 'GET', path: `${BASE_PATH}/pets/:petId`, operationId: 'getPet', summary: 'Get a pet (deprecated)', auth: true,
    deprecated: true, statuses: [200, 400, 401, 404, 429, 500], handler: getPet,
  },
  {
    method: 'GET', path: `${BASE_PATH}/openapi.json`, operationId: 'getOpenApi', summary: 'This interface description',
    auth: false, statuses: [200], handler: serveOpenApi,
  },
  {
    method: 'GET', path: '/healthz', operationId: 'getHealth', summary: 'Liveness', auth: false,
    statuses: [200], handler: healthz,
  },
  {
    method: 'GET', path: '/readyz', operationId: 'getReadiness', summary: 'Readiness: the store is open and writable',
    auth: false, statuses: [200, 503], handler: readyz,
  },
];

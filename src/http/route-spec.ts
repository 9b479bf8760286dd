import type { Scope } from '../pet/contract.js';
import type { Handler } from './operations.js';
import type { Method } from './router.js';

/** A fragment of the OpenAPI document, as plain JSON data. */
export type Json = Record<string, unknown>;

/**
 * One route of the service, as data. The router is built from the table in `routes.ts` and so is the
 * OpenAPI document (`openapi.ts`), so a route cannot exist in one and not the other. A route that
 * needs a key names the scope the key must hold: none can be open to every key by omission.
 */
export type RouteSpec = RouteData &
  /** Bearer authentication required (all of `/v1` but the interface description), and the scope (403 without it). */
  ({ auth: true; scope: Scope } | { auth: false; scope?: undefined });

interface RouteData {
  method: Method;
  /** Router pattern: `:name` is a path parameter. */
  path: string;
  operationId: string;
  summary: string;
  deprecated?: boolean;
  /** The reference page: served, and described, only while the page is on (`--docs`). */
  referencePage?: true;
  /** Left to an embedder's `next()` when there is one: `/` is the embedder's own page, not the pet store's. */
  embedderFirst?: true;
  /** Every status this route answers with, documented in OpenAPI. */
  statuses: readonly number[];
  /** The rest of its OpenAPI description: parameters and body by component name, the success response. */
  doc: {
    parameters?: readonly string[];
    body?: string;
    /** The success response; `eventStream`: also answered as `text/event-stream` (its schema and example). */
    success: { description: string; schema: Json; mediaType?: string; eventStream?: { schema: Json; example: string } };
    /** Headers beyond the common ones, by status (component names under `components/headers`). */
    responseHeaders?: Readonly<Record<number, readonly string[]>>;
    /** What an error status means for this route, where the common description does not say it. */
    errors?: Readonly<Record<number, string>>;
  };
  handler: Handler;
}

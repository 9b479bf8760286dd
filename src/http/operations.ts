import type { IncomingMessage, ServerResponse } from 'node:http';
import { storedScope } from '../auth/scope.js';
import { readJsonBody } from './body.js';
import { HttpError } from './http-error.js';
import { idempotencyKey } from './idempotency-key.js';
import { petJson, petsJson, type Pet } from '../pet/pet.js';
import type { Mount } from './mount.js';
import { json, type Reply } from './respond.js';
import type { ListPage, ListQuery, ListText, PetStore, PetText } from '../store/store.js';
import { parseQuery, decodeComponent, singleParam } from './url.js';
import { parseInt64, parseLimit, validateNewPet, validateStatus } from '../pet/validate.js';

/** What a handler may use of its request; it answers with a Reply and never writes to `res` itself. */
export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Readonly<Record<string, string>>;
  search: string;
  store: PetStore;
  bodyLimit: number;
  mount: Mount;
  /** The identity of the request's API key; undefined on public routes. */
  scope: string | undefined;
}

export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** listPets: ascending ids, `limit`, `status`, and the `after` cursor with a `Link: rel="next"`. */
export const listPets: Handler = (ctx) => {
  const query = parseQuery(ctx.search);
  const limit = parseLimit(singleParam(query, 'limit'));
  const rawStatus = singleParam(query, 'status');
  const status = rawStatus === undefined ? undefined : validateStatus(rawStatus, 'query parameter "status"');
  const rawAfter = singleParam(query, 'after');
  const after = rawAfter === undefined ? 0n : parseInt64(rawAfter, 'query parameter "after"');
  // Store ids are safe integers: a cursor below 1 starts at the beginning, one above the range is past the end.
  const cursor = after < 0n ? 0 : after > MAX_SAFE ? Number.MAX_SAFE_INTEGER : Number(after);
  const page = pageText(ctx.store, { after: cursor, limit, status });
  const base = ctx.mount.base;
  if (page instanceof Promise) return page.then((p) => listReply(p, limit, status, base));
  return listReply(page, limit, status, base);
};

/** The page as JSON text: from the store's own text when it keeps pets so, else formatted here. */
function pageText(store: PetStore, query: ListQuery): ListText | Promise<ListText> {
  if (store.listText !== undefined) return store.listText(query);
  const page = store.list(query);
  const asText = (p: ListPage): ListText => ({ json: petsJson(p.pets), lastId: p.pets.at(-1)?.id, more: p.more });
  return page instanceof Promise ? page.then(asText) : asText(page);
}

function listReply(page: ListText, limit: number, status: string | undefined, base: string): Reply {
  if (!page.more || page.lastId === undefined) return json(200, page.json);
  const filter = status === undefined ? '' : `&status=${status}`;
  return json(200, page.json, { link: `<${base}/pets?limit=${limit}${filter}&after=${page.lastId}>; rel="next"` });
}

/**
 * createPet: a validated NewPet, stored durably, answered 201 with the Pet and its Location. With an
 * Idempotency-Key, a retry of a create that succeeded gets the same answer and stores nothing.
 */
export const createPet: Handler = async (ctx) => {
  const key = idempotencyKey(ctx.req);
  const body = await readJsonBody(ctx.req, ctx.res, ctx.bodyLimit);
  const pet = validateNewPet(body);
  if (key === undefined) return created(await ctx.store.create(pet), ctx.mount);
  if (ctx.store.createOnce === undefined || ctx.scope === undefined) {
    throw new HttpError(400, 'invalid_request', 'the Idempotency-Key header is not supported by this server\'s store');
  }
  const result = await ctx.store.createOnce(pet, { scope: await storedScope(ctx.scope), key });
  return created(result.pet, ctx.mount, result.replayed);
};

function created(pet: Pet, mount: Mount, replayed = false): Reply {
  const location = `${mount.base}/pets/${pet.id}`;
  return json(201, petJson(pet), replayed ? { location, 'idempotent-replayed': 'true' } : { location });
}

/** getPet (deprecated): 200, 404 for a valid int64 without a pet, 400 for anything else. */
export const getPet: Handler = (ctx) => {
  const raw = decodeComponent(ctx.params['petId'] ?? '', 'path parameter "petId"');
  const id = parseInt64(raw, 'path parameter "petId"');
  if (id < 1n || id > MAX_SAFE) throw notFound(raw);
  const text = ctx.store.getText !== undefined ? ctx.store.getText(Number(id)) : textOf(ctx.store.get(Number(id)));
  if (text instanceof Promise) return text.then((t) => petReply(t, raw));
  return petReply(text, raw);
};

function textOf(pet: Pet | undefined | Promise<Pet | undefined>): PetText | undefined | Promise<PetText | undefined> {
  if (pet instanceof Promise) return pet.then((p) => (p === undefined ? undefined : petJson(p)));
  return pet === undefined ? undefined : petJson(pet);
}

function petReply(text: PetText | undefined, raw: string): Reply {
  if (text === undefined) throw notFound(raw);
  return json(200, text);
}

const notFound = (raw: string): HttpError => new HttpError(404, 'not_found', `no pet with id ${raw}`);

export const healthz: Handler = () => json(200, '{"status":"ok"}');

export const readyz: Handler = (ctx) => {
  if (!ctx.store.ready) throw new HttpError(503, 'unavailable', 'the pet store is not open or cannot write');
  return json(200, '{"status":"ready"}');
};

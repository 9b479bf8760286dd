import type { IncomingMessage, ServerResponse } from 'node:http';
import { storedScope } from '../auth/scope.js';
import { readJsonBody } from './body.js';
import { conditional, pageTag, petTag } from './pipeline/conditional.js';
import { EventStream, resumeAfter, wantsEventStream } from './feed/event-stream.js';
import type { Feed } from './feed/feed.js';
import { HttpError } from './http-error.js';
import { idempotencyKey } from './pipeline/idempotency-key.js';
import { waitForPets } from './feed/long-poll.js';
import { petJson } from '../pet/codec.js';
import type { Pet } from '../pet/pet.js';
import type { Mount } from './mount.js';
import { pageText } from './feed/page-text.js';
import { json, type Reply } from './respond.js';
import type { ListQuery, ListText, PetStore, PetText } from '../store/store.js';
import { parseQuery, decodeComponent, singleParam } from './url.js';
import { parseInt64, parseLimit, parseWait, validateNewPet, validateStatus } from '../pet/validate.js';

/** What a handler may use of its request; it answers with a Reply and never writes to `res` itself. */
export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Readonly<Record<string, string>>;
  search: string;
  store: PetStore;
  /** Where waiting requests and event streams are held, and learn of new pets. */
  feed: Feed;
  bodyLimit: number;
  mount: Mount;
  /** The identity of the request's API key; undefined on public routes. */
  scope: string | undefined;
  /** The id of the request's API key (keys.json, the database, `env-N`); undefined on public routes. */
  keyId: string | undefined;
}

export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** 1 to 15 digits without a leading zero: always below 2^53. */
const PLAIN_ID = /^[1-9][0-9]{0,14}$/;

/**
 * listPets: ascending ids, `limit`, `status`, and the `after` cursor with a `Link: rel="next"`; an
 * ETag, and a 304 for a page the client has. With `wait`, an empty page waits for a matching pet;
 * with `Accept: text/event-stream`, the pets come as a stream instead (event-stream.ts).
 */
export const listPets: Handler = (ctx) => {
  const query = parseQuery(ctx.search);
  const limit = parseLimit(singleParam(query, 'limit'));
  const rawStatus = singleParam(query, 'status');
  const status = rawStatus === undefined ? undefined : validateStatus(rawStatus, 'query parameter "status"');
  const rawAfter = singleParam(query, 'after');
  const after = rawAfter === undefined ? 0n : parseInt64(rawAfter, 'query parameter "after"');
  const wait = parseWait(singleParam(query, 'wait'));
  // Store ids are safe integers: a cursor below 1 starts at the beginning, one above the range is past the end.
  const cursor = after < 0n ? 0 : after > MAX_SAFE ? Number.MAX_SAFE_INTEGER : Number(after);
  if (wantsEventStream(ctx.req)) return openStream(ctx, status, resumeAfter(ctx.req, cursor));
  const list = { after: cursor, limit, status };
  const seen = ctx.feed.latest;
  const revocations = ctx.feed.revocations;
  const page = pageText(ctx.store, list);
  if (page instanceof Promise) return page.then((p) => listAnswer(ctx, p, list, wait, seen, revocations));
  return listAnswer(ctx, page, list, wait, seen, revocations);
};

/** The page, or with `wait` and nothing to show, the first page that has something (long-poll.ts). */
function listAnswer(
  ctx: RequestContext,
  page: ListText,
  list: ListQuery,
  wait: number,
  seen: number,
  revocations: number,
): Reply | Promise<Reply> {
  if (wait === 0 || page.lastId !== undefined) return listReply(ctx, page, list);
  const key = { id: ctx.keyId, revocations };
  return waitForPets(ctx.feed, list, seen, wait * 1000, ctx.res, page, key).then((found) =>
    listReply(ctx, found, list),
  );
}

function listReply(ctx: RequestContext, page: ListText, { after, limit, status }: ListQuery): Reply {
  const etag = pageTag(limit, after, status, page.lastId, page.more);
  if (!page.more || page.lastId === undefined) return conditional(ctx.req, json(200, page.json, { etag }), etag);
  const filter = status === undefined ? '' : `&status=${status}`;
  return conditional(
    ctx.req,
    json(200, page.json, {
      link: `<${ctx.mount.base}/pets?limit=${limit}${filter}&after=${page.lastId}>; rel="next"`,
      etag,
    }),
    etag,
  );
}

/** The event stream: held at once, its first page read before the answer begins, so that a 503 is still an answer. */
function openStream(ctx: RequestContext, status: ListQuery['status'], after: number): Promise<Reply> {
  const stream = new EventStream(ctx.feed, ctx.res, status, after, ctx.keyId);
  const at = ctx.feed.latest;
  return stream.first().then((page) => ({ status: 200, body: '', stream: () => stream.start(page, at) }));
}

/**
 * createPet: a validated NewPet, stored durably, answered 201 with the Pet and its Location. With an
 * Idempotency-Key, a retry of a create that succeeded gets the same answer and stores nothing.
 */
export const createPet: Handler = async (ctx) => {
  const key = idempotencyKey(ctx.req);
  const body = await readJsonBody(ctx.req, ctx.res, ctx.bodyLimit);
  const pet = validateNewPet(body);
  if (key === undefined) return created(await ctx.store.create(pet), ctx.feed, ctx.mount);
  if (ctx.store.createOnce === undefined || ctx.scope === undefined) {
    throw new HttpError(400, 'invalid_request', "the Idempotency-Key header is not supported by this server's store");
  }
  const result = await ctx.store.createOnce(pet, { scope: await storedScope(ctx.scope), key });
  return created(result.pet, ctx.feed, ctx.mount, result.replayed);
};

function created(pet: Pet, feed: Feed, mount: Mount, replayed = false): Reply {
  feed.created(pet.id);
  const location = `${mount.base}/pets/${pet.id}`;
  return json(201, petJson(pet), replayed ? { location, 'idempotent-replayed': 'true' } : { location });
}

/** getPet (deprecated): 200, 404 for a valid int64 without a pet, 400 for anything else. */
export const getPet: Handler = (ctx) => {
  const param = ctx.params.petId ?? '';
  // Most ids come as plain digits that fit a safe integer: nothing to decode, no BigInt to make.
  const plain = PLAIN_ID.test(param);
  const raw = plain ? param : decodeComponent(param, 'path parameter "petId"');
  const petId = plain ? Number(param) : storeId(raw);
  const text = ctx.store.getText !== undefined ? ctx.store.getText(petId) : textOf(ctx.store.get(petId));
  if (text instanceof Promise) return text.then((t) => petReply(ctx.req, t, raw, petId));
  return petReply(ctx.req, text, raw, petId);
};

/**
 * A pet id as the contract allows it (int64, any leading zeros): the store's id, or a 404 for one no store can hold.
 */
function storeId(raw: string): number {
  const id = parseInt64(raw, 'path parameter "petId"');
  if (id < 1n || id > MAX_SAFE) throw notFound(raw);
  return Number(id);
}

function textOf(pet: Pet | undefined | Promise<Pet | undefined>): PetText | undefined | Promise<PetText | undefined> {
  if (pet instanceof Promise) return pet.then((p) => (p === undefined ? undefined : petJson(p)));
  return pet === undefined ? undefined : petJson(pet);
}

function petReply(req: IncomingMessage, text: PetText | undefined, raw: string, id: number): Reply {
  if (text === undefined) throw notFound(raw);
  const etag = petTag(id);
  return conditional(req, json(200, text, { etag }), etag);
}

const notFound = (raw: string): HttpError => new HttpError(404, 'not_found', `no pet with id ${raw}`);

export const healthz: Handler = () => json(200, '{"status":"ok"}');

export const readyz: Handler = (ctx) => {
  if (!ctx.store.ready) throw new HttpError(503, 'unavailable', 'the pet store is not open or cannot write');
  return json(200, '{"status":"ready"}');
};

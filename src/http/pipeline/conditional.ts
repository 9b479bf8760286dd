import type { IncomingMessage } from 'node:http';
import type { PetStatus } from '../../pet/contract.js';
import type { Reply } from '../respond.js';

/*
 * Entity tags of the two reads, derived from what determines the answer instead of a hash of its
 * bytes: a pet never changes, and pets become readable in id order, so the page of a query is fixed
 * by the query and its last id, plus whether more follow (which makes its Link). They are weak
 * (RFC 9110 §8.8.1): the gzip and the identity bytes of one page are the same page, and a compressing
 * proxy keeps a weak tag as it is, where it weakens (nginx) or removes (Envoy) a strong one.
 * Neither holds a comma or a space, which naive splitters of If-None-Match would cut.
 */

/** The tag of a page of listPets; `lastId` undefined for an empty page. */
export function pageTag(
  limit: number,
  after: number,
  status: PetStatus | undefined,
  lastId: number | undefined,
  more: boolean,
): string {
  return `W/"${limit}.${after}.${status ?? 'all'}.${lastId ?? 0}${more ? '+' : ''}"`;
}

/** The tag of one pet (getPet): its id says it all. */
export function petTag(id: number): string {
  return `W/"pet.${id}"`;
}

/**
 * The answer to a GET: a 304 with no body when the request's If-None-Match matches the reply's
 * `etag` (the reply's own), else the reply itself. A 304 keeps the headers RFC 9110 §15.4.5 asks it to (ETag, Vary and
 * Cache-Control; `send` adds the latter two) and drops Link, which only a changed tag would change.
 */
export function conditional(req: IncomingMessage, reply: Reply, etag: string): Reply {
  const header = req.headers['if-none-match'];
  if (header === undefined || !matches(header, etag)) return reply;
  return { status: 304, body: reply.body, headers: { etag } };
}

/**
 * Whether the If-None-Match list holds `tag` by weak comparison (§8.8.3.2: the opaque parts equal,
 * either may be weak), or is `*`. A malformed list matches nothing: the full answer is never wrong.
 */
function matches(list: string, tag: string): boolean {
  if (list.trim() === '*') return true;
  const opaque = tag.startsWith('W/') ? tag.slice(2) : tag;
  let at = 0;
  for (;;) {
    while (at < list.length && (list[at] === ' ' || list[at] === '\t' || list[at] === ',')) at++;
    if (at === list.length) return false;
    if (list.startsWith('W/', at)) at += 2;
    if (list[at] !== '"') return false;
    const end = list.indexOf('"', at + 1);
    if (end === -1) return false;
    if (end + 1 - at === opaque.length && list.startsWith(opaque, at)) return true;
    at = end + 1;
  }
}

/**
 * The floor: the leanest node:http server that still answers the benchmark's requests correctly,
 * against which the real server's throughput and CPU per answer are judged (issue 34). It does the
 * work no server can skip: the bearer check (SHA-256 compared in constant time), the `limit` and
 * `status` of a list, the JSON array of that page (pets kept as JSON text, as the file store keeps
 * them, joined per request), one pet by id, and a create kept in memory only (no journal, no fsync:
 * what durability costs is measured against it). Headers go to Node as one flat array with the
 * body in a single `res.end`. Prints its URL as the server does.
 *
 * With --contract-headers it also sends the response headers the service must send: Cache-Control
 * and X-Content-Type-Options (issue 6), a new X-Request-Id made as the server makes it (issue 5),
 * Link rel="next" on a page with more, and Deprecation, Sunset and Link on a single pet
 * (decisions.md), an ETag on both and Vary: Accept-Encoding on the page, over 1 KiB (issue 23). It
 * shows what those headers alone cost a bare server, measured beside the floor.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { firstPage, makePet } from './pets.js';

const sha256 = (text) => hash('sha256', text, 'buffer');
const key = (process.env.PETSTORE_API_KEYS ?? '').split(',')[0].trim();
if (key === '') {
  process.stderr.write('floor: set PETSTORE_API_KEYS\n');
  process.exit(2);
}
const keyHash = sha256(key);
const portFlag = process.argv.indexOf('--port');
const port = portFlag === -1 ? 0 : Number(process.argv[portFlag + 1]);
// Index id - 1: each pet's JSON text.
const pets = Array.from({ length: 1000 }, (_, i) => JSON.stringify(makePet(i + 1)));
const statuses = pets.map((text) => JSON.parse(text).status);
const contractHeaders = process.argv.includes('--contract-headers');
// Loaded only then, so the plain floor's cold start stays two files of its own.
const { newRequestId } = contractHeaders ? await import('../dist/http/pipeline/request-id.js') : {};
const DEPRECATED = [
  'deprecation',
  '@1795564800',
  'sunset',
  'Thu, 05 Dec 2030 00:00:00 GMT',
  'link',
  '</v1/pets>; rel="successor-version"',
];
const STATUSES = new Set(['available', 'pending', 'sold']);

function send(res, status, body, extra) {
  const length = Buffer.byteLength(body);
  const headers = contractHeaders
    ? [
        'content-type',
        'application/json',
        'cache-control',
        'no-store',
        'x-content-type-options',
        'nosniff',
        'x-request-id',
        newRequestId(),
        ...(extra ?? []),
      ]
    : ['content-type', 'application/json'];
  headers.push('content-length', length);
  res.writeHead(status, headers);
  res.end(body);
}

/** `limit` (1–100, 20 when absent) and `status` of a query string; undefined for anything else. */
function listQuery(search) {
  let limit = 20;
  let status;
  for (const pair of search === '' ? [] : search.split('&')) {
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    if (name === 'limit' && /^[0-9]{1,3}$/.test(value) && Number(value) >= 1 && Number(value) <= 100)
      limit = Number(value);
    else if (name === 'status' && STATUSES.has(value)) status = value;
    else return undefined;
  }
  return { limit, status };
}

function list(res, { limit, status }) {
  const { body, last, more } = firstPage(pets, statuses, limit, status);
  if (!contractHeaders) return send(res, 200, body);
  const extra = more
    ? ['link', `</v1/pets?limit=${limit}${status === undefined ? '' : `&status=${status}`}&after=${last}>; rel="next"`]
    : [];
  extra.push('etag', `W/"${limit}.0.${status ?? 'all'}.${last}${more ? '+' : ''}"`);
  if (body.length >= 1024) extra.push('vary', 'Accept-Encoding');
  send(res, 200, body, extra);
}

/** A create kept in memory only: the in-memory server the durable create is judged against. */
function create(req, res) {
  let text = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (text += chunk));
  req.on('end', () => {
    let input;
    try {
      input = JSON.parse(text);
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
      return send(res, 400, '{"code":"invalid_request"}');
    }
    if (typeof input?.name !== 'string' || !Number.isSafeInteger(input.categoryId) || !STATUSES.has(input.status))
      return send(res, 400, '{"code":"invalid_request"}');
    const pet = JSON.stringify({
      id: pets.length + 1,
      name: input.name,
      categoryId: input.categoryId,
      status: input.status,
    });
    pets.push(pet);
    statuses.push(input.status);
    send(res, 201, pet);
  });
}

const server = createServer((req, res) => {
  const token = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (token === undefined || !timingSafeEqual(sha256(token), keyHash)) return send(res, 401, '{"code":"unauthorized"}');
  const url = req.url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (path === '/v1/pets') {
    if (req.method === 'POST') return create(req, res);
    const query = req.method === 'GET' ? listQuery(q === -1 ? '' : url.slice(q + 1)) : undefined;
    if (query !== undefined) return list(res, query);
    return send(res, 400, '{"code":"invalid_request"}');
  }
  const id = req.method === 'GET' && path.startsWith('/v1/pets/') ? Number(path.slice(9)) : NaN;
  const pet = Number.isInteger(id) && id >= 1 ? pets[id - 1] : undefined;
  if (pet !== undefined)
    return send(res, 200, pet, contractHeaders ? [...DEPRECATED, 'etag', `W/"pet.${id}"`] : undefined);
  send(res, 404, '{"code":"not_found"}');
});
server.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}/v1`;
  process.stdout.write(`${JSON.stringify({ msg: 'listening', url, pid: process.pid })}\n`);
});
// Exits rather than dies on the runner's SIGTERM, so that `node --cpu-prof` writes its profile.
process.once('SIGTERM', () => process.exit(0));

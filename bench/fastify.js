/**
 * Fastify 5 answering the wrk benchmark's GETs as bench/floor.js --contract-headers answers them
 * (issue 34's target is to be ahead of it), written as a Fastify user would write it: the bearer
 * check in an onRequest hook, a route per operation, the list's `limit` (1–100, 20 when absent) and
 * `status` checked by a querystring JSON schema, the body sent as the prepared JSON string. Fastify's
 * own logger is off, as is usual when benchmarking it (the server's request log stays on: that cost is
 * the server's to carry). No create: wrk measures POST against the floor only.
 *
 * Fastify is not a dependency of this project: it is loaded from `--fastify-dir <dir>` (a directory
 * holding node_modules/fastify; bench/wrk.js installs one outside the repository). Fastify adds
 * "; charset=utf-8" to the JSON content type of a string body; the header names and bodies are the floor's.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { firstPage, makePet } from './pets.js';
import { newRequestId } from '../dist/http/pipeline/request-id.js';

const flag = (name) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
const sha256 = (text) => hash('sha256', text, 'buffer');
const key = (process.env.PETSTORE_API_KEYS ?? '').split(',')[0].trim();
const dir = flag('--fastify-dir') ?? process.env.BENCH_FASTIFY_DIR;
if (key === '' || dir === undefined) {
  process.stderr.write('fastify: set PETSTORE_API_KEYS and --fastify-dir (or BENCH_FASTIFY_DIR)\n');
  process.exit(2);
}
const keyHash = sha256(key);
const Fastify = createRequire(join(dir, 'package.json'))('fastify');
// Index id - 1: each pet's JSON text, as the floor keeps them.
const pets = Array.from({ length: 1000 }, (_, i) => JSON.stringify(makePet(i + 1)));
const statuses = pets.map((text) => JSON.parse(text).status);
const JSON_TYPE = 'application/json';
const DEPRECATED = {
  deprecation: '@1795564800',
  sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
  link: '</v1/pets>; rel="successor-version"',
};

// removeAdditional off: an unknown query parameter is refused with 400, as the floor refuses it,
// instead of being dropped (Fastify's Ajv default).
const app = Fastify({ logger: false, genReqId: newRequestId, ajv: { customOptions: { removeAdditional: false } } });

app.addHook('onRequest', (request, reply, done) => {
  reply.headers({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'x-request-id': request.id });
  const token = /^Bearer +(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (token === undefined || !timingSafeEqual(sha256(token), keyHash))
    return reply.code(401).type(JSON_TYPE).send('{"code":"unauthorized"}');
  done();
});

app.setNotFoundHandler((_request, reply) => reply.code(404).type(JSON_TYPE).send('{"code":"not_found"}'));
app.setErrorHandler((error, _request, reply) => {
  if (error.validation !== undefined) return reply.code(400).type(JSON_TYPE).send('{"code":"invalid_request"}');
  reply.code(500).type(JSON_TYPE).send('{"code":"internal_error"}');
});

const listSchema = {
  querystring: {
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
      status: { type: 'string', enum: ['available', 'pending', 'sold'] },
    },
    additionalProperties: false,
  },
};

app.get('/v1/pets', { schema: listSchema }, (request, reply) => {
  const { limit, status } = request.query;
  const { body, last, more } = firstPage(pets, statuses, limit, status);
  if (more)
    reply.header(
      'link',
      `</v1/pets?limit=${limit}${status === undefined ? '' : `&status=${status}`}&after=${last}>; rel="next"`,
    );
  reply.header('etag', `W/"${limit}.0.${status ?? 'all'}.${last}${more ? '+' : ''}"`);
  if (body.length >= 1024) reply.header('vary', 'Accept-Encoding');
  reply.type(JSON_TYPE).send(body);
});

app.get('/v1/pets/:id', (request, reply) => {
  const id = Number(request.params.id);
  const pet = Number.isInteger(id) && id >= 1 ? pets[id - 1] : undefined;
  if (pet === undefined) return reply.code(404).type(JSON_TYPE).send('{"code":"not_found"}');
  reply.headers(DEPRECATED).header('etag', `W/"pet.${id}"`).type(JSON_TYPE).send(pet);
});

await app.listen({ port: Number(flag('--port') ?? 0), host: '127.0.0.1' });
const url = `http://127.0.0.1:${app.server.address().port}/v1`;
process.stdout.write(`${JSON.stringify({ msg: 'listening', url, pid: process.pid })}\n`);
// Exits rather than dies on the runner's SIGTERM, as the floor does, so that `node --cpu-prof` writes its profile.
process.once('SIGTERM', () => process.exit(0));

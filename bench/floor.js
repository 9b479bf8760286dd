/**
 * The floor: the least a node:http server must do to answer the same GET requests as the real one,
 * with the same bearer check (SHA-256 compared in constant time) and the same JSON. The real server's
 * throughput and latency are judged against this. Prints its URL as the server does.
 *
 * With --contract-headers it also sends the response headers the service must send: Cache-Control
 * and X-Content-Type-Options (issue 6), a new X-Request-Id made as the server makes it (issue 5),
 * Link rel="next" on a page with more, and Deprecation, Sunset and Link on a single pet
 * (decisions.md), an ETag on both and Vary: Accept-Encoding on the page, over 1 KiB (issue 23). It
 * shows what those headers alone cost a bare server, measured beside the floor.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { makePet } from './pets.js';

const sha256 = (text) => hash('sha256', text, 'buffer');
const key = (process.env.PETSTORE_API_KEYS ?? '').split(',')[0].trim();
if (key === '') {
  process.stderr.write('floor: set PETSTORE_API_KEYS\n');
  process.exit(2);
}
const keyHash = sha256(key);
const portFlag = process.argv.indexOf('--port');
const port = portFlag === -1 ? 0 : Number(process.argv[portFlag + 1]);
const pets = Array.from({ length: 1000 }, (_, i) => makePet(i + 1));
const contractHeaders = process.argv.includes('--contract-headers');
// Loaded only then, so the plain floor's cold start stays two files of its own.
const { newRequestId } = contractHeaders ? await import('../dist/http/request-id.js') : {};
const NEXT_PAGE = ['link', '</v1/pets?limit=20&after=20>; rel="next"', 'etag', 'W/"20.0.all.20+"', 'vary', 'Accept-Encoding'];
const DEPRECATED = ['deprecation', '@1795564800', 'sunset', 'Thu, 05 Dec 2030 00:00:00 GMT', 'link', '</v1/pets>; rel="successor-version"'];

function send(res, status, body, extra = []) {
  const length = Buffer.byteLength(body);
  if (contractHeaders) {
    res.writeHead(status, ['content-type', 'application/json', 'cache-control', 'no-store', 'x-content-type-options', 'nosniff',
      'x-request-id', newRequestId(), ...extra, 'content-length', length]);
  } else {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': length });
  }
  res.end(body);
}

const server = createServer((req, res) => {
  const token = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (token === undefined || !timingSafeEqual(sha256(token), keyHash)) return send(res, 401, '{"code":"unauthorized"}');
  const path = req.url.split('?', 1)[0];
  if (req.method === 'GET' && path === '/v1/pets') return send(res, 200, JSON.stringify(pets.slice(0, 20)), NEXT_PAGE);
  const id = /^\/v1\/pets\/([0-9]{1,10})$/.exec(path)?.[1];
  const pet = req.method === 'GET' && id !== undefined ? pets[Number(id) - 1] : undefined;
  if (pet !== undefined) return send(res, 200, JSON.stringify(pet), [...DEPRECATED, 'etag', `W/"pet.${pet.id}"`]);
  send(res, 404, '{"code":"not_found"}');
});
server.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}/v1`;
  process.stdout.write(JSON.stringify({ msg: 'listening', url, pid: process.pid }) + '\n');
});

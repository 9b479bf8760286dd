/**
 * The floor: the least a node:http server must do to answer the same GET requests as the real one,
 * with the same bearer check (SHA-256 compared in constant time) and the same JSON. The real server's
 * throughput and latency are judged against this. Prints its URL as the server does.
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

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = createServer((req, res) => {
  const token = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (token === undefined || !timingSafeEqual(sha256(token), keyHash)) return send(res, 401, '{"code":"unauthorized"}');
  const path = req.url.split('?', 1)[0];
  if (req.method === 'GET' && path === '/v1/pets') return send(res, 200, JSON.stringify(pets.slice(0, 20)));
  const id = /^\/v1\/pets\/([0-9]{1,10})$/.exec(path)?.[1];
  const pet = req.method === 'GET' && id !== undefined ? pets[Number(id) - 1] : undefined;
  if (pet !== undefined) return send(res, 200, JSON.stringify(pet));
  send(res, 404, '{"code":"not_found"}');
});
server.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}/v1`;
  process.stdout.write(JSON.stringify({ msg: 'listening', url, pid: process.pid }) + '\n');
});

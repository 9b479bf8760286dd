/**
 * The receivers of `node bench/run.js --webhooks`, in a process of their own so that they take no
 * time from the load generator: seven that answer 204 at once, one that never answers, one that
 * answers 500, one that answers after 2 s. Prints their URLs as one JSON line; ends with stdin.
 */
import { createServer } from 'node:http';

const kinds = ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'hang', 'error', 'slow'];
const urls = [];
for (const kind of kinds) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (kind === 'ok') res.writeHead(204).end();
      else if (kind === 'error') res.writeHead(500).end();
      else if (kind === 'slow') setTimeout(() => res.writeHead(204).end(), 2000);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  urls.push(`http://127.0.0.1:${server.address().port}/${kind}`);
}
process.stdout.write(`${JSON.stringify(urls)}\n`);
process.stdin.resume().on('end', () => process.exit(0));

/**
 * A webhook receiver for the tests: node:http on 127.0.0.1, port 0. It checks every delivery's
 * signature with the Standard Webhooks algorithm, written here from the specification and not from
 * the server's code: HMAC-SHA256 keyed with the base64 after `whsec_`, over `id.timestamp.body`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

export interface Delivery {
  id: string;
  timestamp: string;
  /** The signatures of the header that verify, as the index of the secret each matched. */
  verifiedWith: number[];
  signatures: number;
  body: string;
  petId: number;
}

/** What the receiver answers: a status, or `hang` (never answer), or a function of its own. */
export type Behaviour = number | 'hang' | ((req: IncomingMessage, res: ServerResponse) => void);

export interface Receiver {
  url: string;
  port: number;
  /** Deliveries whose request arrived in full, in arrival order (also those answered with an error). */
  received: Delivery[];
  /** Those answered 2xx. */
  accepted: Delivery[];
  behaviour: Behaviour;
  /** The secrets to verify with; a delivery none of them verifies fails the test at the end. */
  secrets: string[];
  unverified: number;
  close(): Promise<void>;
  /** Listens again on the same port after close(). */
  reopen(): Promise<void>;
}

/** Verifies `header` as Standard Webhooks says: any `v1,` signature that equals the HMAC of one secret. */
export function verifiedSecrets(
  secrets: readonly string[],
  id: string,
  timestamp: string,
  body: string,
  header: string,
): number[] {
  const matched: number[] = [];
  const given = header
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'));
  secrets.forEach((secret, index) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest();
    if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) matched.push(index);
  });
  return matched;
}

export async function startReceiver(t: TestContext, behaviour: Behaviour = 200): Promise<Receiver> {
  const hung = new Set<ServerResponse>();
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id']);
      const timestamp = String(req.headers['webhook-timestamp']);
      const header = String(req.headers['webhook-signature'] ?? '');
      const verifiedWith = verifiedSecrets(receiver.secrets, id, timestamp, body, header);
      if (verifiedWith.length === 0) receiver.unverified++;
      const petId = (JSON.parse(body) as { data: { id: number } }).data.id;
      const delivery = { id, timestamp, verifiedWith, signatures: header.split(' ').length, body, petId };
      receiver.received.push(delivery);
      const current = receiver.behaviour;
      if (current === 'hang') return void hung.add(res);
      if (typeof current === 'function') return current(req, res);
      if (current >= 200 && current < 300) receiver.accepted.push(delivery);
      res.writeHead(current).end();
    });
  };
  let server: Server = createServer(onRequest);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const close = async (): Promise<void> => {
    for (const res of hung) res.destroy();
    hung.clear();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received: [],
    accepted: [],
    behaviour,
    secrets: [],
    unverified: 0,
    close,
    async reopen() {
      server = createServer(onRequest);
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    },
  };
  t.after(async () => {
    if (server.listening) await close();
  });
  return receiver;
}

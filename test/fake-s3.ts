/**
 * A misbehaving S3 endpoint on 127.0.0.1:0, for what a real one would never do: each request is
 * answered by the test's handler, which may trickle, send forever or repeat a LIST's token.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { S3Destination } from '#dist/store/file/replication/destinations/s3-destination.js';

export type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

export interface FakeS3 {
  url: string;
  /** Requests by method and path, as they arrived. */
  seen: string[];
  destination(): S3Destination;
}

export const AWS_ENV = { AWS_REGION: 'eu-central-1', AWS_ACCESS_KEY_ID: 'FAKE', AWS_SECRET_ACCESS_KEY: 'fake-secret' };

/** A fake S3 closed (every socket with it) when `t` ends. */
export async function fakeS3(t: TestContext, handler: Handler): Promise<FakeS3> {
  const sockets = new Set<Socket>();
  const seen: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push(`${req.method} ${req.url}`);
      handler(req, res, Buffer.concat(chunks));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const location = { bucket: 'replicas', prefix: '', endpoint: new URL(url), region: 'eu-central-1' };
  const credentials = { accessKeyId: AWS_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: AWS_ENV.AWS_SECRET_ACCESS_KEY };
  return { url, seen, destination: () => new S3Destination(location, credentials) };
}

/** A LIST (v2) answer holding `keys`, truncated with `next` when it is given. */
export function listAnswer(keys: readonly string[], next?: string): string {
  const contents = keys.map((key) => `<Contents><Key>${key}</Key></Contents>`).join('');
  const more =
    next === undefined
      ? '<IsTruncated>false</IsTruncated>'
      : `<IsTruncated>true</IsTruncated><NextContinuationToken>${next}</NextContinuationToken>`;
  return `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>${contents}${more}</ListBucketResult>`;
}

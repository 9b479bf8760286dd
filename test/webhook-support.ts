/**
 * What the webhook tests share: subscriptions made with the command line, or in this process as the
 * command line makes them (for tests to which a subscription is only a setting: a process for each costs
 * about 0.3 s of CPU), and a server that may deliver to 127.0.0.1.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { runCli, startServer, type TestServer, tempDir } from './support.js';
import type { ListenOptions } from './package.js';
import { runWebhooksCommand, subscriptionFileStorage, type WebhookCommandOptions } from '#dist/cli/webhooks-command.js';

/** `webhooks add url [args]` on `dataDir`: the new subscription's id and its secret, as printed once. */
export async function addWebhook(
  dataDir: string,
  url: string,
  ...args: string[]
): Promise<{ id: string; secret: string }> {
  const run = await runCli(['webhooks', 'add', url, '--data-dir', dataDir, '--webhooks-allow-http', ...args]);
  assert.equal(run.code, 0, run.stderr);
  const match = /^added webhook (wh_[0-9a-f]{8}) for .*\n(whsec_[A-Za-z0-9+/]{43}=)\n$/.exec(run.stdout);
  assert.ok(match !== null, run.stdout);
  return { id: match[1] as string, secret: match[2] as string };
}

/** `webhooks <args>` on `dataDir`, which must succeed; its output. */
export async function webhooks(dataDir: string, ...args: string[]): Promise<string> {
  const run = await runCli(['webhooks', ...args, '--data-dir', dataDir]);
  assert.equal(run.code, 0, run.stderr);
  return run.stdout;
}

/** `webhooks <args> --data-dir <dataDir> --webhooks-allow-http` run in this process: what it printed. */
export async function webhooksHere(
  dataDir: string,
  args: string[],
  options: Partial<WebhookCommandOptions> = {},
): Promise<string> {
  let printed = '';
  const command = ['petstore', 'webhooks', ...args, '--data-dir', dataDir].join(' ');
  const storage = subscriptionFileStorage(dataDir, command);
  await runWebhooksCommand(storage, args, { allowHttp: true, ...options }, (line) => (printed += `${line}\n`));
  return printed;
}

/** `webhooks add url` in this process, for the pets of `statuses` (every status without): as addWebhook. */
export async function subscribe(
  dataDir: string,
  url: string,
  statuses?: string[],
): Promise<{ id: string; secret: string }> {
  const printed = await webhooksHere(dataDir, ['add', url], { statuses });
  const match = /^added webhook (wh_[0-9a-f]{8}) for .*\n(whsec_[A-Za-z0-9+/]{43}=)\n$/.exec(printed);
  assert.ok(match !== null, printed);
  return { id: match[1] as string, secret: match[2] as string };
}

/** A server on `dataDir` (or a new one) that may deliver to http://127.0.0.1; closed, its directory removed, when `t` ends. */
export async function webhookServer(t: TestContext, options: Partial<ListenOptions> = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? (await tempDir());
  const server = await startServer({ webhooksAllowHttp: true, webhooksAllowPrivate: true, ...options, dataDir });
  // Stopped before its directory goes (after-hooks run in the order they were added).
  t.after(() => server.close());
  return server;
}

export async function createPets(server: TestServer, count: number, status = 'available'): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await server.request('POST', '/v1/pets', {
      body: JSON.stringify({ name: `pet ${i}`, categoryId: 1, status }),
      headers: [['content-type', 'application/json']],
    });
    assert.equal(res.status, 201, res.text);
    ids.push((res.json as { id: number }).id);
  }
  return ids;
}

/**
 * What an operator reads while the database is away: one line per failure that names the error and
 * its code, not a stack trace of the driver's internals.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request, runCli, spawnServerFor, TEST_KEY, waitFor } from '../support.js';
import type { Cluster } from '../postgres-support.js';

/** The error lines a server wrote, parsed. */
function errorLines(stderr: string): Array<{ msg: string; error?: string }> {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: string; msg: string; error?: string })
    .filter((line) => line.level === 'error');
}

export function awayLogTests(cluster: () => Cluster): void {
  test('while the database is away its log lines say the error and its code, with no stack trace', {
    timeout: 60_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    // With a subscription, the server says when webhook delivery has started: the database is stopped only
    // then, or delivery would still be starting (retrying quietly) instead of reloading its subscriptions.
    const added = await runCli(['webhooks', 'add', 'https://hooks.example/in', '--database-url', url]);
    assert.equal(added.code, 0, added.stderr);
    const server = await spawnServerFor(t, ['--database-url', url], { PETSTORE_API_KEYS: TEST_KEY });
    await waitFor(() => server.stdout().includes('"msg":"webhook subscription delivering"'), 10_000, 'delivery');
    await cluster().stop();
    try {
      const headers: Array<[string, string]> = [['content-type', 'application/json']];
      const body = '{"name":"Rex","categoryId":1}';
      assert.equal((await request(server.url, 'POST', '/v1/pets', { headers, body })).status, 503);
      // The key poller and the webhook subscriptions' reload, once a second each, fail too: their lines are read.
      for (const start of ['cannot read the API keys', 'cannot read the webhook subscriptions'])
        await waitFor(
          () => errorLines(server.stderr()).some((l) => l.msg.startsWith(start)),
          10_000,
          `a log line "${start}"`,
        );
    } finally {
      await cluster().start();
    }
    const lines = errorLines(server.stderr());
    assert.ok(
      lines.some((l) => l.msg.startsWith('the database cannot be used')),
      server.stderr(),
    );
    // 'request failed', the HTTP layer's line for each 503 (src/http/app.ts), among them.
    assert.ok(
      lines.some((l) => l.msg === 'request failed'),
      server.stderr(),
    );
    for (const line of lines) {
      assert.doesNotMatch(line.error ?? '', /\n\s+at /, `no stack trace: ${line.msg}`);
      assert.match(line.error ?? '', /\S \((ECONNREFUSED|ECONNRESET|CONNECTION_[A-Z]+|57P0[1-3])\)$/, line.msg);
    }
  });
}

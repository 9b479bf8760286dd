/** What the metrics tests share: a server with its metrics listener, and a strict scrape of it. */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { type Family, parseExposition } from './exposition-parser.js';
import { request, startServer, waitFor, type TestServer } from './support.js';
import type { ListenOptions } from './package.js';

export const EXPOSITION_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A server on port 0 with its metrics listener on another port 0, closed when `t` ends. */
export async function metricsServer(
  t: TestContext,
  options: Partial<ListenOptions> = {},
): Promise<TestServer & { metricsUrl: string }> {
  const server = await startServer({ metricsPort: 0, ...options });
  t.after(() => server.close());
  const metricsUrl = server.running.metricsUrl;
  assert.ok(metricsUrl !== undefined, 'the metrics listener is up');
  return Object.assign(server, { metricsUrl });
}

/** GET /metrics, checked (200, the exposition's content type) and parsed strictly; `text` is what came. */
export async function scrape(metricsUrl: string): Promise<{ families: Map<string, Family>; text: string }> {
  const url = new URL(metricsUrl);
  const res = await request(url.origin, 'GET', url.pathname, { auth: false });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers['content-type'], EXPOSITION_TYPE);
  return { families: parseExposition(res.text), text: res.text };
}

/** The count of each request series, as `METHOD route status`. */
export function requestCounts(families: Map<string, Family>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of families.get('http_server_request_duration_seconds')?.series ?? []) {
    if (s.name !== 'http_server_request_duration_seconds_count') continue;
    counts[`${s.labels.http_request_method} ${s.labels.http_route} ${s.labels.http_response_status_code}`] = s.value;
  }
  return counts;
}

/** The values of a family with one label, by that label's value. */
export function byLabel(families: Map<string, Family>, name: string, label: string): Record<string, number> {
  return Object.fromEntries((families.get(name)?.series ?? []).map((s) => [s.labels[label] as string, s.value]));
}

/** A service's exposition text, read now: its metrics listener's, or an embedder's `metrics()`. */
export type Exposition = () => Promise<string>;

/** The exposition of the metrics listener at `metricsUrl`. */
export function listenerExposition(metricsUrl: string): Exposition {
  return async () => (await scrape(metricsUrl)).text;
}

/**
 * Waits until the service holds `wait` waiting requests and `stream` event streams
 * (petstore_http_held_requests): a request is held once its first page came back empty, so this is
 * the moment it waits. Fails naming `what` after `ms`.
 */
export async function waitForHeld(
  exposition: Exposition,
  expected: { wait: number; stream?: number },
  what: string,
  ms = 5000,
): Promise<void> {
  await waitFor(
    async () => {
      const held = byLabel(parseExposition(await exposition()), 'petstore_http_held_requests', 'kind');
      return held.wait === expected.wait && held.stream === (expected.stream ?? 0);
    },
    ms,
    what,
  );
}

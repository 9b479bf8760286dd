/**
 * What the replication tests share: a create, waiting until a server has shipped everything, a
 * preload that shifts the wall clock of a server process, servers stopped before their directory goes,
 * and the state of a lineage before its first round, for tests that ship rounds themselves.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { ShippedState } from '#dist/store/file/replication/round.js';
import { request, waitFor, type Response, type ServerProcess } from './support.js';
import { scrape } from './metrics-support.js';

export const post = (url: string, name: string, key?: string): Promise<Response> =>
  request(url, 'POST', '/v1/pets', {
    headers: [
      ['content-type', 'application/json'],
      ...(key === undefined ? [] : [['idempotency-key', key] as [string, string]]),
    ],
    body: JSON.stringify({ name, categoryId: 7 }),
  });

/** Polls the metrics until nothing durable is unshipped and a position was written. */
export async function caughtUp(metricsUrl: string): Promise<void> {
  const done = async (): Promise<boolean> => {
    const { families } = await scrape(metricsUrl);
    const value = (name: string): number | undefined => families.get(name)?.series[0]?.value;
    return (
      value('petstore_replication_lag_seconds') === 0 &&
      value('petstore_replication_lag_bytes') === 0 &&
      value('petstore_replication_last_success_timestamp_seconds') !== undefined
    );
  };
  await waitFor(done, 10_000, 'replication caught up');
}

/** The metrics URL a server process logged with its listening line (it was started with --metrics-port 0). */
export function metricsUrlOf(server: ServerProcess): string {
  const url = /"metrics":"(http:[^"]+)"/.exec(server.stdout())?.[1];
  if (url === undefined) throw new Error(`no metrics URL in ${server.stdout()}`);
  return url;
}

/** Servers in this process to stop when the test ends, before its directory goes: registered ahead of dataDir's hook. */
export function stopsFor(t: TestContext): Array<{ stop(): Promise<void> }> {
  const servers: Array<{ stop(): Promise<void> }> = [];
  t.after(async () => {
    for (const server of servers) await server.stop();
  });
  return servers;
}

/**
 * The environment that starts a server process with its wall clock `offsetMs` off (a VM resumed, NTP
 * not yet synced): a preload written into `dir` replaces Date with one shifted by that much.
 */
export async function shiftedClock(dir: string, offsetMs: number): Promise<NodeJS.ProcessEnv> {
  const preload = join(dir, 'shift-clock.cjs');
  await writeFile(
    preload,
    `const Real = Date;
class Shifted extends Real {
  constructor(...args) { if (args.length === 0) super(Real.now() + ${offsetMs}); else super(...args); }
  static now() { return Real.now() + ${offsetMs}; }
}
globalThis.Date = Shifted;
`,
  );
  return { NODE_OPTIONS: `--require ${preload}` };
}

/** A lineage of `store` before its first round: nothing shipped, generation 1, continuing nothing. */
export function unshipped(store: string, lineage = '20261127T000000Z-000000000000'): ShippedState {
  return { store, lineage, generation: 1, parent: null, seq: 0, previous: null, files: new Map() };
}

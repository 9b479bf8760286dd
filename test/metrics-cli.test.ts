/**
 * Metrics from the command line: --metrics-port and PETSTORE_METRICS_PORT open the listener (the
 * listening line says where), a port in use names its flag, and a server without metrics loads
 * neither the metrics modules nor perf_hooks.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { metricValue } from './exposition-parser.js';
import {
  launchServer,
  request,
  runCli,
  runNode,
  SERVER_JS,
  spawnServerFor,
  stopProcess,
  tempDirFor,
} from './support.js';
import { requestCounts, scrape } from './metrics-support.js';

const KEY = 'metrics-key-0123456789abcdef';

for (const how of ['--metrics-port 0', 'PETSTORE_METRICS_PORT=0']) {
  test(`${how} serves the metrics on a port of its own, named in the listening line`, async (t) => {
    const flags = how.startsWith('--') ? ['--metrics-port', '0'] : [];
    const env = how.startsWith('--') ? {} : { PETSTORE_METRICS_PORT: '0' };
    const server = await spawnServerFor(t, ['--data-dir', await tempDirFor(t), ...flags], {
      PETSTORE_API_KEYS: KEY,
      ...env,
    });
    const listening = JSON.parse(server.stdout().split('\n')[0] as string) as { metrics?: string };
    assert.match(listening.metrics ?? '', /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.notEqual(new URL(listening.metrics as string).port, new URL(server.url).port);
    assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: KEY })).status, 200);
    assert.deepEqual(requestCounts((await scrape(listening.metrics as string)).families), { 'GET /v1/pets 200': 1 });
    assert.equal(await stopProcess(server), 0);
  });
}

test('a server process reports its own figures: the open-file limit it was given, its descriptors, its memory, its start', async (t) => {
  // A limit of its own, so that a figure not read from the process shows. (Node raises its soft
  // limit to the hard one at start, so the two are the same in a Node process.)
  // And a start of its own: the process begins with the shell, Node 0.3 s later, as on a slow board.
  const script = `ulimit -n 4000 && sleep 0.3 && exec "$0" "$@"`;
  const launched = Date.now() / 1000;
  const server = await launchServer(
    '/bin/sh',
    [
      '-c',
      script,
      process.execPath,
      SERVER_JS,
      '--port',
      '0',
      '--data-dir',
      await tempDirFor(t),
      '--metrics-port',
      '0',
    ],
    {
      env: { PATH: process.env.PATH, PETSTORE_API_KEYS: KEY },
    },
  );
  t.after(async () => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  const pid = server.child.pid as number;
  const metricsUrl = (JSON.parse(server.stdout().split('\n')[0] as string) as { metrics: string }).metrics;
  const { families } = await scrape(metricsUrl);
  assert.equal(metricValue(families, 'process_max_fds'), 4000);
  assert.match(readFileSync(`/proc/${pid}/limits`, 'utf8'), /^Max open files\s+4000\s/m);
  // Read after the scrape: the scrape's own connection and directory handle, and sockets still
  // closing, come and go around it, so the two readings agree within a few descriptors.
  const fds = readdirSync(`/proc/${pid}/fd`).length;
  assert.ok(
    Math.abs(metricValue(families, 'process_open_fds') - fds) <= 8,
    `open fds ${metricValue(families, 'process_open_fds')}, /proc says ${fds}`,
  );
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
  assert.ok(
    Math.abs(metricValue(families, 'process_resident_memory_bytes') - rss) < 16 * 2 ** 20,
    `rss ${metricValue(families, 'process_resident_memory_bytes')}, /proc says ${rss}`,
  );
  const started = metricValue(families, 'process_start_time_seconds');
  // The kernel's start of the process (/proc/<pid>/stat), within its 10 ms ticks, not Node's own start-up 0.3 s later.
  assert.ok(
    started >= launched - 0.05 && started < launched + 0.15,
    `started ${(started - launched).toFixed(3)} s after it was launched`,
  );
  assert.equal(await stopProcess(server), 0);
});

test('without a metrics port there is no listener and the listening line names none', async (t) => {
  const server = await spawnServerFor(t, ['--data-dir', await tempDirFor(t)], { PETSTORE_API_KEYS: KEY });
  assert.doesNotMatch(server.stdout(), /metrics/);
  assert.equal(await stopProcess(server), 0);
});

test('a metrics port in use refuses the start, naming --metrics-port; a metrics port that is not a port is a usage error', async (t) => {
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => busy.close(resolve)));
  const port = (busy.address() as { port: number }).port;
  const dataDir = await tempDirFor(t);
  const taken = await runCli(['--port', '0', '--data-dir', dataDir, '--metrics-port', String(port)], {
    PETSTORE_API_KEYS: KEY,
  });
  assert.equal(taken.code, 1);
  assert.equal(
    taken.stderr,
    `cannot start: 127.0.0.1:${port} is already in use by another process; stop that process, or choose another port with --metrics-port (0 takes any free one)\n`,
  );
  const wrong = await runCli(['--port', '0', '--data-dir', dataDir, '--metrics-port', 'http'], {
    PETSTORE_API_KEYS: KEY,
  });
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /--metrics-port must be an integer from 0 to 65535, got "http"/);
  const help = await runCli(['--help']);
  assert.match(help.stdout, /--metrics-port <value>.*\n.*env PETSTORE_METRICS_PORT, default unset/);
  assert.match(help.stdout, /--metrics-host <value>.*\n.*env PETSTORE_METRICS_HOST, default 127\.0\.0\.1/);
});

test('a service without metrics loads neither the metrics modules nor perf_hooks; with them, both', async (t) => {
  const dataDir = await tempDirFor(t);
  const path = join(__dirname, `tmp-metrics-${randomBytes(6).toString('hex')}.cjs`);
  // Run inside the package folder, so that `petstore-api` resolves to this package.
  await writeFile(
    path,
    `
    const { listen } = require('petstore-api');
    const { get } = require('node:http');
    (async () => {
      for (const metrics of [false, true]) {
        const running = await listen({ port: 0, dataDir: ${JSON.stringify(dataDir)} + '/' + metrics, keys: ['${KEY}'], metrics, logger: { request() {}, info() {}, error() {} } });
        // node:http, not fetch: fetch loads perf_hooks itself.
        await new Promise((resolve) => get(running.url + '/v1/pets', { headers: { authorization: 'Bearer ${KEY}' } }, (res) => res.resume().on('end', resolve)));
        const perfHooks = process.moduleLoadList.some((m) => /perf_hooks/.test(m));
        const metricModules = Object.keys(require.cache).filter((f) => /dist.(lib.metrics.|service.(process-|store-)?metrics|http.request-metrics)/.test(f)).length;
        console.log(JSON.stringify({ metrics, perfHooks, metricModules }));
        await running.close();
      }
    })();
  `,
  );
  t.after(() => rm(path, { force: true }));
  const run = await runNode(path, 10_000);
  assert.equal(run.code, 0, run.stderr);
  const [off, on] = run.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { perfHooks: boolean; metricModules: number });
  assert.deepEqual(off, { metrics: false, perfHooks: false, metricModules: 0 });
  assert.equal(on?.perfHooks, true);
  assert.ok((on?.metricModules ?? 0) > 3, `${on?.metricModules} metrics modules`);
});

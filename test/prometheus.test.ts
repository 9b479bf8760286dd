/**
 * The exposition and the alert rules shipped in docs/ against Prometheus's own tools: promtool
 * checks a real scrape and checks and unit-tests the rules, and a Prometheus server scrapes a running
 * server and evaluates them. Skipped, saying so, where
 * Debian's prometheus package is not installed (CI installs it).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { freePort, request, tempDirFor } from './support.js';
import { metricsServer, scrape } from './metrics-support.js';
import { prometheusBin, promtool, PROMETHEUS_SKIP_REASON } from './promtool-support.js';

const ROOT = resolve(__dirname, '../..');
const RULES = join(ROOT, 'docs', 'prometheus-alerts.yml');
const bin = prometheusBin();

describe('with Prometheus', { skip: bin === undefined ? PROMETHEUS_SKIP_REASON : false }, () => {
  test('promtool check metrics finds nothing to say about a real scrape', async (t) => {
    const server = await metricsServer(t);
    await server.request('POST', '/v1/pets', {
      body: '{"name":"a","categoryId":1}',
      headers: [['content-type', 'application/json']],
    });
    await server.request('GET', '/v1/pets/1');
    await server.request('GET', '/v1/nowhere', { auth: false });
    const { text } = await scrape(server.metricsUrl);
    const checked = await promtool((bin as { promtool: string }).promtool, ['check', 'metrics'], text);
    assert.deepEqual(checked, { code: 0, output: '' });
  });

  test('promtool check rules accepts docs/prometheus-alerts.yml', async () => {
    const checked = await promtool((bin as { promtool: string }).promtool, ['check', 'rules', RULES]);
    assert.equal(checked.code, 0, checked.output);
    assert.match(checked.output, /SUCCESS: 12 rules found/);
  });

  test('each alert fires on the series it is for, after its wait, and none on a healthy server (promtool test rules)', async () => {
    const tested = await promtool((bin as { promtool: string }).promtool, [
      'test',
      'rules',
      join(ROOT, 'test', 'prometheus-alerts.test.yml'),
    ]);
    assert.equal(tested.code, 0, tested.output);
    assert.match(tested.output, /SUCCESS/);
  });

  test('a real Prometheus scrapes the metrics listener and evaluates the alert rules without error', {
    timeout: 120_000,
  }, async (t) => {
    const server = await metricsServer(t);
    for (let i = 0; i < 3; i++) assert.equal((await server.request('GET', '/v1/pets')).status, 200);
    const dir = await tempDirFor(t, 'petstore-prometheus-');
    const target = new URL(server.metricsUrl).host;
    await writeFile(
      join(dir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        `rule_files: [${JSON.stringify(RULES)}]`,
        `scrape_configs: [{ job_name: petstore, static_configs: [{ targets: [${JSON.stringify(target)}] }] }]`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    const child = spawn(
      (bin as { prometheus: string }).prometheus,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (log = (log + s).slice(-4000)));
    const exited = new Promise((r) => child.once('exit', r));
    t.after(async () => {
      child.kill('SIGKILL');
      await exited;
    });
    const api = `http://127.0.0.1:${port}`;
    const query = async (
      promql: string,
    ): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> => {
      const res = await request(api, 'GET', `/api/v1/query?query=${encodeURIComponent(promql)}`, { auth: false }).catch(
        () => undefined,
      );
      return res?.status === 200
        ? (res.json as { data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } }).data
            .result
        : [];
    };
    const deadline = Date.now() + 40_000;
    let counted: Awaited<ReturnType<typeof query>> = [];
    while (counted.length === 0) {
      assert.ok(
        Date.now() < deadline && child.exitCode === null,
        `Prometheus did not scrape the server in time:\n${log}`,
      );
      await new Promise((r) => setTimeout(r, 250));
      counted = await query(
        'http_server_request_duration_seconds_count{job="petstore",http_route="/v1/pets",http_response_status_code="200"}',
      );
    }
    assert.equal(counted[0]?.value[1], '3');
    assert.equal((await query('up{job="petstore"}'))[0]?.value[1], '1');
    assert.equal((await query('petstore_store_ready'))[0]?.value[1], '1');
    // Each rule has been evaluated against real series without an error.
    for (;;) {
      const rules = await request(api, 'GET', '/api/v1/rules', { auth: false });
      const evaluated = (
        rules.json as {
          data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> };
        }
      ).data.groups.flatMap((g) => g.rules);
      assert.equal(evaluated.length, 12);
      assert.deepEqual(
        evaluated.filter((r) => r.health === 'err'),
        [],
        'no rule fails to evaluate',
      );
      if (evaluated.every((r) => r.health === 'ok')) break;
      assert.ok(Date.now() < deadline, `rules not evaluated in time: ${JSON.stringify(evaluated)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.deepEqual(await query('ALERTS'), [], 'a healthy server fires no alert');
  });
});

/**
 * An embedder loads the core only: the modules of a capability that is not configured (replication,
 * PostgreSQL, webhooks, metrics) are not loaded by a default `createPetstore()`, and each loads once
 * it is configured (README, "Layout").
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { runNode, TEST_KEY, tempDirFor } from './support.js';

const OPTIONAL = ['store/file/replication/', 'store/postgres/', 'webhooks/', 'service/metrics/', 'lib/metrics/'];

/** The dist/ modules loaded after `createPetstore(options)` in a fresh process, as paths under dist/. */
async function loadedBy(t: test.TestContext, options: string): Promise<string[]> {
  // Run inside the package folder, so that `petstore-api` resolves to this package.
  const path = join(__dirname, `tmp-core-${randomBytes(6).toString('hex')}.cjs`);
  await writeFile(
    path,
    `const { createPetstore } = require('petstore-api');
    (async () => {
      const petstore = await createPetstore({ keys: ['${TEST_KEY}'], logger: { request() {}, info() {}, error() {} }, ${options} });
      const loaded = Object.keys(require.cache).filter((f) => f.includes('/dist/')).map((f) => f.replace(/.*\\/dist\\//, ''));
      await petstore.close();
      console.log(JSON.stringify(loaded));
    })();`,
  );
  t.after(() => rm(path, { force: true }));
  const run = await runNode(path, 20_000);
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout.trim().split('\n').at(-1) as string) as string[];
}

test('a default createPetstore() loads the core only; replication and metrics load once configured', async (t) => {
  const dir = await tempDirFor(t);
  const core = await loadedBy(t, `dataDir: ${JSON.stringify(join(dir, 'core'))}`);
  assert.ok(core.includes('store/file/file-store.js') && core.includes('http/app.js'), 'the scan sees the core');
  assert.deepEqual(
    core.filter((m) => OPTIONAL.some((folder) => m.startsWith(folder))),
    [],
    'no optional module in the core',
  );
  const replica = join(dir, 'replica');
  const configured = await loadedBy(
    t,
    `dataDir: ${JSON.stringify(join(dir, 'configured'))}, replicateTo: ${JSON.stringify(replica)}, metrics: true`,
  );
  assert.ok(configured.includes('store/file/replication/replicator.js'), 'replication loads when configured');
  assert.ok(configured.includes('service/metrics/service-metrics.js'), 'metrics load when on');
});

'use strict';
/**
 * `npm run test:quick`: the core of the suite, for the loop of editing and testing: every test file
 * in dist/test/ but those that need PostgreSQL, a browser or Prometheus, and those that kill servers
 * round after round. `npm test` runs them all, and is what says a change is done.
 */
const { spawnSync } = require('node:child_process');
const { readdirSync } = require('node:fs');
const { join } = require('node:path');

// Each left out with what it needs or does; a file not named here is in the quick run.
const LEFT_OUT = new Map([
  ['postgres.test.js', 'a PostgreSQL cluster of its own'],
  ['cors-browser.test.js', 'Chromium'],
  ['feed-browser.test.js', 'Chromium'],
  ['reference-page.test.js', 'Chromium'],
  ['prometheus.test.js', 'Prometheus and promtool'],
  ['production.test.js', 'promtool, and servers run as another user'],
  ['store-crash.test.js', 'kill -9 round after round'],
  ['unclean-stop.test.js', 'kill -9 round after round'],
  ['replication-loss.test.js', 'kill -9 and lost directories, round after round'],
]);

const folder = join(__dirname, '..', 'dist', 'test');
const files = readdirSync(folder)
  .filter((name) => name.endsWith('.test.js') && !LEFT_OUT.has(name))
  .map((name) => join(folder, name));
const reporter = `--test-reporter=${join(__dirname, 'test-summary.js')}`;
const run = spawnSync(process.execPath, ['--test', '--test-concurrency=2', reporter, ...files], { stdio: 'inherit' });
process.exitCode = run.status ?? 1;

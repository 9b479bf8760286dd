'use strict';
/**
 * `npm test` and `npm run test:quick`: the test files of dist/test/ under node --test, CONCURRENCY at a
 * time, through the reporter scripts/test-summary.js. `npm test` runs them all, and is what says a
 * change is done. `--quick` is the core, for the loop of editing and testing: the service in this
 * process over real HTTP, its store, feed, keys, limits and webhooks; it leaves out the files named
 * in LEFT_OUT, each with what it needs or does.
 */
const { spawnSync } = require('node:child_process');
const { readdirSync } = require('node:fs');
const { join } = require('node:path');

// Most tests wait (on timers, sockets, other processes), not compute: six files at a time keep two
// cores busy. What failed at this setting on a busy machine is in bench/results.md.
const CONCURRENCY = 6;

// Started first, so that the longest files do not begin last and stretch the run (each alone, 2026-11-27).
const LONGEST = [
  'postgres-instances.test.js',
  'postgres.test.js',
  'postgres-outages.test.js',
  'connections.test.js',
  'unread-answers.test.js',
  'keys.test.js',
  'replication-history.test.js',
  'tls.test.js',
  'stream-edges.test.js',
  'stopping.test.js',
  'damaged-data.test.js',
  'lock-file.test.js',
  // The quick run's longest after them (each alone, 2026-11-28): mostly waits, which fill a slot but not a core.
  'connection-slots.test.js',
  'event-stream.test.js',
  'stream-keys.test.js',
  'webhooks.test.js',
  'store.test.js',
  'fuzz.test.js',
  'quota.test.js',
  'store-faults.test.js',
  'abuse.test.js',
  'webhook-start.test.js',
  'key-duplicates.test.js',
];

const NEEDS = 'needs';
const PROCESSES = 'runs the program as processes';
// Each left out of --quick with what it needs or does; a file not named here is in the quick run.
const LEFT_OUT = new Map([
  ['postgres.test.js', `${NEEDS} a PostgreSQL cluster of its own`],
  ['postgres-instances.test.js', `${NEEDS} a PostgreSQL cluster of its own`],
  ['postgres-outages.test.js', `${NEEDS} a PostgreSQL cluster of its own`],
  ['cors-browser.test.js', `${NEEDS} Chromium`],
  ['feed-browser.test.js', `${NEEDS} Chromium`],
  ['reference-page.test.js', `${NEEDS} Chromium`],
  ['prometheus.test.js', `${NEEDS} Prometheus and promtool`],
  ['production.test.js', `${NEEDS} promtool, and servers run as another user`],
  ['store-crash.test.js', `${PROCESSES}: kill -9 round after round`],
  ['unclean-stop.test.js', `${PROCESSES}: kill -9 round after round`],
  ['replication-loss.test.js', `${PROCESSES}: kill -9 and lost directories, round after round`],
  ['cli.test.js', `${PROCESSES}: the command line, command after command`],
  ['keys.test.js', `${PROCESSES}: keys create, list and revoke`],
  ['webhooks-cli.test.js', `${PROCESSES}: webhooks add, list and remove`],
  ['metrics-cli.test.js', `${PROCESSES}: the metrics flags, start after start`],
  ['messages.test.js', `${PROCESSES}: what operators read, start after start`],
  ['damaged-data.test.js', `${PROCESSES}: start, verify and repair on damaged directories`],
  ['lost-records.test.js', `${PROCESSES}: verify and repair on directories cut short`],
  ['backup.test.js', `${PROCESSES}: backup, of a directory at rest and under creates`],
  ['restore-owner.test.js', `${PROCESSES}: restore, as root and as another user`],
  ['migrate-owner.test.js', `${PROCESSES}: migrate, as root and as another user`],
  ['root-reads.test.js', `${PROCESSES}: commands run as root on another user's directory`],
  ['private-files.test.js', `${PROCESSES}: the files' modes, start after start`],
  ['format-version.test.js', `${PROCESSES}: starts on directories of each format`],
  ['copy-while-running.test.js', `${PROCESSES}: cp -a of a running server, then starts on the copies`],
  ['lock-file.test.js', `${PROCESSES}: processes contending for one lock, round after round`],
  ['lock-owner.test.js', `${PROCESSES}: servers in PID namespaces of their own`],
  ['idempotency.test.js', `${PROCESSES}: kill -9 during keyed creates round after round, restarts`],
  ['full-disk-start.test.js', `${PROCESSES}: kill -9 on a full disk, then starts`],
  ['connections.test.js', `${PROCESSES}: resets and stops of a server process, over HTTP and TLS`],
  ['stopping.test.js', `${PROCESSES}: SIGTERM and SIGINT at every point of a stop`],
  ['tls.test.js', `${PROCESSES}: starts refused or warned about for each kind of certificate`],
  ['certificate-reload.test.js', `${PROCESSES}: certificates renewed under a running server`],
  ['socket-activation.test.js', `${PROCESSES}: restarts through a socket launcher`],
  ['quick-start.test.js', `${PROCESSES}: the README's quick start under three umasks`],
  ['replication.test.js', `${PROCESSES}: replication to a directory, start after start`],
  ['replication-history.test.js', `${PROCESSES}: restarts with clocks set apart, take-overs, restore drills`],
  ['replication-sealed.test.js', `${PROCESSES}: sealed replicas, start after start`],
  ['replication-points.test.js', `${PROCESSES}: restores to points in time`],
  ['replication-retention.test.js', `${PROCESSES}: lineages a second apart`],
  ['replication-tidiness.test.js', `${PROCESSES}: lineages a second apart`],
  ['replication-keys.test.js', `${PROCESSES}: replicate-key and restore`],
  ['replication-list.test.js', `${PROCESSES}: restore --list after restarts`],
  ['replication-key-message.test.js', `${PROCESSES}: verify --from without the key`],
  ['replication-links.test.js', `${PROCESSES}: verify and restore through symbolic links`],
  ['replication-retention-compaction.test.js', `${PROCESSES}: retention across a compaction, then verify`],
  ['replication-s3.test.js', `${PROCESSES}: replication to a fake S3, restore from it`],
  ['replication-s3-limits.test.js', `${PROCESSES}: a fake S3 that refuses, restore from it`],
  ['docs-s3.test.js', `${PROCESSES}: s3rver and operations.md's commands`],
  ['docs-examples.test.js', `${PROCESSES}: the guides' examples run with node`],
  ['docs-links.test.js', `${PROCESSES}: npm pack, then every link of the tarball`],
  ['generated-client.test.js', `${PROCESSES}: openapi-typescript and tsc`],
]);

const quick = process.argv.includes('--quick');
const folder = join(__dirname, '..', 'dist', 'test');
const all = readdirSync(folder)
  .filter((name) => name.endsWith('.test.js'))
  .sort();
const names = [...LONGEST.filter((name) => all.includes(name)), ...all.filter((name) => !LONGEST.includes(name))];
const files = names.filter((name) => !(quick && LEFT_OUT.has(name))).map((name) => join(folder, name));
const reporter = `--test-reporter=${join(__dirname, 'test-summary.js')}`;
const args = ['--test', `--test-concurrency=${CONCURRENCY}`, reporter, ...files];
const run = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exitCode = run.status ?? 1;

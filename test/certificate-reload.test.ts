/**
 * Certificates renewed without a restart: on SIGHUP and when the --tls-cert/--tls-key files change,
 * new connections get the new pair while open ones keep theirs; a pair that does not load is refused
 * with one log line naming the file, and the previous pair still serves.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { connect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { CertificateReload } from '#dist/service/tls/certificate-reload.js';
import { TEST_KEY, request, spawnServerFor, startServer, tempDirFor, waitFor, within } from './support.js';
import { scrape } from './metrics-support.js';
import { metricValue } from './exposition-parser.js';
import type { Logger } from './package.js';
import { certificate, needsOpenssl } from './tls-support.js';

/** A TLS connection to `url` (any certificate accepted: the test looks at which one came). */
function open(url: string): Promise<TLSSocket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), rejectUnauthorized: false }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** The SHA-256 fingerprint of the certificate a new connection to `url` gets. */
async function servedFingerprint(url: string): Promise<string> {
  const socket = await open(url);
  const fingerprint = socket.getPeerCertificate().fingerprint256;
  socket.destroy();
  return fingerprint;
}

function fingerprintOf(certFile: string): string {
  return new X509Certificate(readFileSync(certFile)).fingerprint256;
}

/** A GET /healthz on an open connection, resolving with the status line. */
function healthOn(socket: TLSSocket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1');
      if (!text.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      resolve(text.slice(0, text.indexOf('\r\n')));
    };
    socket.on('data', onData).once('error', reject);
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  });
}

/** A logger that keeps its lines, for the tests that look for one. */
function keptLogger(): Logger & { lines: { level: string; message: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  return {
    lines,
    request() {},
    info: (message, fields) => void lines.push({ level: 'info', message, ...(fields === undefined ? {} : { fields }) }),
    error: (message, _error, fields) => {
      lines.push({ level: 'error', message, ...(fields === undefined ? {} : { fields }) });
    },
  };
}

const renewed = 'a pair renewed on disk (symlinks moved, as by certbot) goes to new connections; open ones keep theirs';
test(renewed, needsOpenssl, async (t) => {
  const certs = await tempDirFor(t, 'petstore-reload-');
  const first = certificate(certs, 'first');
  const second = certificate(certs, 'second');
  // /etc/letsencrypt/live/<name>/ holds symlinks into ../../archive; a renewal points them at new files.
  const live = join(certs, 'live');
  mkdirSync(live);
  symlinkSync(first.cert, join(live, 'fullchain.pem'));
  symlinkSync(first.key, join(live, 'privkey.pem'));
  const files = { certFile: join(live, 'fullchain.pem'), keyFile: join(live, 'privkey.pem') };
  const logger = keptLogger();
  const tls = { cert: readFileSync(first.cert), key: readFileSync(first.key), ...files };
  const server = await startServer({ tls, logger, metricsPort: 0 });
  t.after(() => server.close());
  const before = await open(server.url);
  t.after(() => before.destroy());
  assert.equal(before.getPeerCertificate().fingerprint256, fingerprintOf(first.cert));

  for (const [name, target] of [
    ['fullchain.pem', second.cert],
    ['privkey.pem', second.key],
  ] as const) {
    symlinkSync(target, join(live, `${name}.new`));
    renameSync(join(live, `${name}.new`), join(live, name));
  }
  await within(
    (async () => {
      while ((await servedFingerprint(server.url)) !== fingerprintOf(second.cert)) {
        await new Promise((r) => setTimeout(r, 100));
      }
    })(),
    5000,
    'new connections get the renewed certificate',
  );
  assert.equal(await healthOn(before), 'HTTP/1.1 200 OK', 'the connection opened before is still served');
  assert.equal(before.getPeerCertificate().fingerprint256, fingerprintOf(first.cert), 'with its own certificate');
  const reloaded = logger.lines.filter((l) => l.level === 'info' && l.message.startsWith('TLS certificate reloaded'));
  assert.equal(reloaded.length, 1, JSON.stringify(logger.lines));
  assert.deepEqual(
    logger.lines.filter((l) => l.level === 'error'),
    [],
  );

  const { families } = await scrape(server.running.metricsUrl as string);
  const expiry = Math.floor(Date.parse(new X509Certificate(readFileSync(second.cert)).validTo) / 1000);
  assert.equal(metricValue(families, 'petstore_tls_certificate_expiry_timestamp_seconds'), expiry);
  assert.equal(metricValue(families, 'petstore_tls_certificate_reloads_total', { result: 'loaded' }), 1);
});

const mismatched = "a key that is not the certificate's is refused with one line naming it; the old pair still serves";
test(mismatched, needsOpenssl, async (t) => {
  const certs = await tempDirFor(t, 'petstore-reload-');
  const first = certificate(certs, 'first');
  const other = certificate(certs, 'other', 'rsa');
  const logger = keptLogger();
  const files = { certFile: first.cert, keyFile: first.key };
  const tls = { cert: readFileSync(first.cert), key: readFileSync(first.key), ...files };
  const server = await startServer({ tls, logger, metricsPort: 0 });
  t.after(() => server.close());

  // An RSA key under an EC certificate: OpenSSL itself would not compare them.
  copyFileSync(other.key, `${first.key}.new`);
  renameSync(`${first.key}.new`, first.key);
  await waitFor(() => logger.lines.some((l) => l.level === 'error'), 5000, 'the refusal is logged');
  const [refusal] = logger.lines.filter((l) => l.level === 'error');
  assert.equal(
    refusal?.message,
    `the TLS pair was not reloaded: ${first.key} does not belong to the certificate ` +
      `${first.cert}; new connections still get the previous certificate`,
  );
  assert.equal(refusal?.fields?.file, first.key);
  assert.equal(await servedFingerprint(server.url), fingerprintOf(first.cert));
  const { families } = await scrape(server.running.metricsUrl as string);
  assert.equal(metricValue(families, 'petstore_tls_certificate_reloads_total', { result: 'refused' }), 1);

  // Time is what is under test here: the bad pair stays on disk for two more polls (1 s each) and is not said again.
  await new Promise((r) => setTimeout(r, 2500));
  const again = await scrape(server.running.metricsUrl as string);
  assert.equal(metricValue(again.families, 'petstore_tls_certificate_reloads_total', { result: 'refused' }), 1);

  // The matching pair written afterwards loads; the bad one was said once, not at every poll in between.
  copyFileSync(other.cert, `${first.cert}.new`);
  renameSync(`${first.cert}.new`, first.cert);
  const loaded = (): boolean => logger.lines.some((l) => l.message.startsWith('TLS certificate reloaded'));
  await waitFor(loaded, 5000, 'the matching pair is loaded');
  assert.equal(await servedFingerprint(server.url), fingerprintOf(other.cert));
  assert.equal(logger.lines.filter((l) => l.level === 'error').length, 1, JSON.stringify(logger.lines));
});

test('SIGHUP reads the pair at once; a certificate that is not PEM is refused, naming it', needsOpenssl, async (t) => {
  const certs = await tempDirFor(t, 'petstore-reload-');
  const data = await tempDirFor(t, 'petstore-reload-data-');
  const first = certificate(certs, 'first');
  const second = certificate(certs, 'second');
  const cert = join(certs, 'server.crt');
  const key = join(certs, 'server.key');
  copyFileSync(first.cert, cert);
  copyFileSync(first.key, key);
  const args = ['--data-dir', data, '--tls-cert', cert, '--tls-key', key, '--metrics-port', '0'];
  const server = await spawnServerFor(t, args, { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(await servedFingerprint(server.url), fingerprintOf(first.cert));

  // Written in place, the key first: a poll may see the half-done pair, SIGHUP reads both at once.
  copyFileSync(second.key, key);
  copyFileSync(second.cert, cert);
  server.child.kill('SIGHUP');
  await waitFor(() => server.stdout().includes('"msg":"TLS certificate reloaded'), 5000, 'the reload is logged');
  assert.equal(await servedFingerprint(server.url), fingerprintOf(second.cert));

  copyFileSync(second.key, cert);
  server.child.kill('SIGHUP');
  await waitFor(() => server.stderr().includes('not reloaded'), 5000, 'the refusal is logged');
  const line = server
    .stderr()
    .split('\n')
    .find((l) => l.includes('not reloaded')) as string;
  assert.equal(JSON.parse(line).file, cert, line);
  assert.match(JSON.parse(line).msg, /server\.crt is not a PEM certificate/);
  assert.equal(await servedFingerprint(server.url), fingerprintOf(second.cert), 'the previous pair still serves');
  assert.equal(server.child.exitCode, null, 'SIGHUP does not end the server');
});

test('SIGHUP to a server of plain HTTP is logged and ends nothing', async (t) => {
  const data = await tempDirFor(t, 'petstore-reload-data-');
  const server = await spawnServerFor(t, ['--data-dir', data], { PETSTORE_API_KEYS: TEST_KEY });
  server.child.kill('SIGHUP');
  await waitFor(() => server.stdout().includes('SIGHUP: plain HTTP'), 5000, 'the SIGHUP is logged');
  assert.equal((await request(server.url, 'GET', '/healthz', { auth: false })).status, 200);
});

const settle = 'a pair changed on disk is taken only when two polls read it alike: a half-written one never loads';
test(settle, needsOpenssl, async (t) => {
  const certs = await tempDirFor(t, 'petstore-reload-');
  const first = certificate(certs, 'first');
  const second = certificate(certs, 'second');
  const files = { cert: join(certs, 'served.crt'), key: join(certs, 'served.key') };
  copyFileSync(first.cert, files.cert);
  copyFileSync(first.key, files.key);
  const pair = { cert: readFileSync(first.cert), key: readFileSync(first.key) };
  const server = createTlsServer(pair);
  const served = t.mock.method(server, 'setSecureContext');
  const logger = keptLogger();
  // The polls' timer is the test's to fire; each poll, once it has read both files, sets the next timer.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const timers = t.mock.method(globalThis, 'setTimeout');
  const reload = new CertificateReload(server, { ...pair, certFile: files.cert, keyFile: files.key }, files, logger);
  t.after(() => reload.close());
  const poll = async (): Promise<void> => {
    const set = timers.mock.callCount();
    t.mock.timers.tick(1000);
    const deadline = Date.now() + 5000;
    while (timers.mock.callCount() === set) {
      assert.ok(Date.now() < deadline, 'a poll that never ends');
      await new Promise((r) => setImmediate(r));
    }
  };
  const unchanged = (step: string): void => {
    assert.equal(served.mock.callCount(), 0, `${step}: the old pair still serves`);
    assert.deepEqual(reload.counts, { loaded: 0, refused: 0 }, `${step}: nothing loaded, nothing refused`);
    assert.deepEqual(logger.lines, [], `${step}: nothing logged`);
  };
  const renewed = { cert: readFileSync(second.cert), key: readFileSync(second.key) };

  writeFileSync(files.cert, renewed.cert.subarray(0, renewed.cert.length >> 1));
  await poll();
  unchanged('half the new certificate');
  writeFileSync(files.cert, renewed.cert);
  await poll();
  unchanged('the new certificate beside the old key');
  writeFileSync(files.key, renewed.key);
  await poll();
  unchanged('the new pair, read once');
  await poll();
  assert.equal(served.mock.callCount(), 1, 'the new pair, read twice alike, serves');
  assert.deepEqual(served.mock.calls[0]?.arguments[0], renewed);
  assert.deepEqual(reload.counts, { loaded: 1, refused: 0 });
  assert.deepEqual(
    logger.lines.map((l) => l.message),
    ['TLS certificate reloaded: new connections get it, open ones keep theirs'],
  );
});

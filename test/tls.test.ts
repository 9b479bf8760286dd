/**
 * HTTPS without a proxy (--tls-cert, --tls-key): the same answers over TLS, clear refusals for a
 * missing or mismatched pair, and a warning when plain HTTP is served beyond loopback.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { TEST_KEY, rawRequest, request, runCli, spawnServerFor, stopProcess, tempDirFor, within } from './support.js';
import { byLabel, metricsServer, scrape } from './metrics-support.js';
import { metricValue } from './exposition-parser.js';
import { listen, silentLoggerForTests } from './package.js';
import { certificate, needsOpenssl } from './tls-support.js';

const ENV = { PETSTORE_API_KEYS: TEST_KEY };

function get(
  url: string,
  path: string,
  ca: Buffer,
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${url}${path}`,
      { ca, headers: { authorization: `Bearer ${TEST_KEY}` }, agent: false },
      (res) => {
        let body = '';
        res
          .setEncoding('utf8')
          .on('data', (s: string) => (body += s))
          .on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A self-signed certificate for 127.0.0.1 valid from `start` to `end` (YYYYMMDDHHMMSSZ) and its key, as files in `dir`. */
function certificateFor(dir: string, name: string, start: string, end: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  // `openssl req -x509` takes only -days from now; `openssl ca` takes any dates.
  const ca = join(dir, `${name}-ca`);
  mkdirSync(ca);
  writeFileSync(join(ca, 'index.txt'), '');
  writeFileSync(join(ca, 'serial'), '01\n');
  const config = join(ca, 'ca.cnf');
  writeFileSync(
    config,
    [
      '[ca]',
      'default_ca = here',
      '[here]',
      `database = ${ca}/index.txt`,
      `serial = ${ca}/serial`,
      `new_certs_dir = ${ca}`,
      'default_md = sha256',
      'policy = any',
      'unique_subject = no',
      'copy_extensions = copy',
      '[any]',
      'commonName = supplied',
      '[req]',
      'distinguished_name = dn',
      '[dn]',
      '',
    ].join('\n'),
  );
  execFileSync(
    'openssl',
    [
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      csr,
      '-config',
      config,
    ],
    { stdio: 'ignore' },
  );
  execFileSync(
    'openssl',
    [
      'ca',
      '-batch',
      '-config',
      config,
      '-selfsign',
      '-keyfile',
      key,
      '-in',
      csr,
      '-startdate',
      start,
      '-enddate',
      end,
      '-notext',
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

async function dirs(t: TestContext): Promise<{ data: string; certs: string }> {
  return { data: await tempDirFor(t, 'petstore-tls-data-'), certs: await tempDirFor(t, 'petstore-tls-certs-') };
}

test('with --tls-cert and --tls-key the server speaks HTTPS, with the same answers', needsOpenssl, async (t) => {
  const { data, certs } = await dirs(t);
  const { cert, key } = certificate(certs, 'server');
  const server = await spawnServerFor(t, ['--data-dir', data, '--tls-cert', cert, '--tls-key', key], ENV);
  assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const ca = await readFile(cert);
  const listed = await get(server.url, '/v1/pets', ca);
  assert.equal(listed.status, 200);
  assert.equal(listed.body, '[]');
  const openapi = await get(server.url, '/v1/openapi.json', ca);
  assert.equal(openapi.status, 200);
  // Plain HTTP on the TLS port gets no answer a client could mistake for the API's.
  const plain = await request(server.url.replace('https:', 'http:'), 'GET', '/v1/pets').then(
    (r) => r.status,
    () => 0,
  );
  assert.notEqual(plain, 200);
  assert.equal(await stopProcess(server), 0);
  assert.doesNotMatch(server.stderr(), /"level":"warn"/, 'TLS on loopback: nothing to warn about');
});

test('a connection that never sends its TLS hello does not hold up the stop', needsOpenssl, async (t) => {
  const { data, certs } = await dirs(t);
  const { cert, key } = certificate(certs, 'server');
  const server = await spawnServerFor(t, ['--data-dir', data, '--tls-cert', cert, '--tls-key', key], ENV);
  const silent = connect(Number(new URL(server.url).port), '127.0.0.1');
  t.after(() => silent.destroy());
  await new Promise((resolve) => silent.once('connect', resolve));
  const started = Date.now();
  assert.equal(await stopProcess(server), 0);
  const took = Date.now() - started;
  assert.ok(took < 1000, `stopped in ${took} ms, not after a handshake timeout`);
});

test('the TLS environment twins configure it too', needsOpenssl, async (t) => {
  const { data, certs } = await dirs(t);
  const { cert, key } = certificate(certs, 'server');
  const server = await spawnServerFor(t, ['--data-dir', data], {
    ...ENV,
    PETSTORE_TLS_CERT: cert,
    PETSTORE_TLS_KEY: key,
  });
  assert.match(server.url, /^https:/);
  assert.equal((await get(server.url, '/healthz', await readFile(cert))).status, 200);
});

test(
  'a key that does not belong to the certificate refuses the start with a clear message',
  needsOpenssl,
  async (t) => {
    const { data, certs } = await dirs(t);
    const one = certificate(certs, 'one');
    const other = certificate(certs, 'other');
    const { code, stdout, stderr } = await runCli(
      ['--port', '0', '--data-dir', data, '--tls-cert', one.cert, '--tls-key', other.key],
      ENV,
    );
    assert.equal(code, 1);
    assert.equal(stderr, `cannot start: ${mismatch(other.key, one.cert)}\n`);
    assert.doesNotMatch(stdout, /listening/);
  },
);

function mismatch(key: string, cert: string): string {
  return `the TLS key ${key} does not belong to the TLS certificate ${cert}: its public key is not the certificate's; give --tls-key the key the certificate was made for`;
}

test(
  'a key of another type than the certificate (RSA and EC, either way) refuses the start naming both files; embedded, listen() refuses it',
  needsOpenssl,
  async (t) => {
    const { data, certs } = await dirs(t);
    const rsa = certificate(certs, 'rsa', 'rsa');
    const ec = certificate(certs, 'ec', 'ec');
    for (const [cert, key] of [
      [rsa.cert, ec.key],
      [ec.cert, rsa.key],
    ] as const) {
      const { code, stdout, stderr } = await runCli(
        ['--port', '0', '--data-dir', data, '--tls-cert', cert, '--tls-key', key],
        ENV,
      );
      assert.equal(code, 1, stdout);
      assert.equal(stderr, `cannot start: ${mismatch(key, cert)}\n`);
      assert.doesNotMatch(stdout, /listening/);
      const tls = { cert: await readFile(cert), key: await readFile(key) };
      const dataDir = await tempDirFor(t);
      await assert.rejects(
        async () => {
          const running = await listen({ port: 0, dataDir, keys: [TEST_KEY], logger: silentLoggerForTests, tls });
          await running.close(); // started: the assertion fails, and nothing is left open
        },
        { code: 'ERR_PETSTORE_TLS', message: 'the TLS key does not belong to the TLS certificate' },
      );
    }
    // Each pair as made still serves.
    for (const pair of [rsa, ec]) {
      const server = await spawnServerFor(
        t,
        ['--data-dir', await tempDirFor(t), '--tls-cert', pair.cert, '--tls-key', pair.key],
        ENV,
      );
      assert.equal((await get(server.url, '/healthz', await readFile(pair.cert))).status, 200);
    }
  },
);

test(
  'failed TLS handshakes are counted in the metrics by reason (no cipher in common, a client gone), plain HTTP apart',
  needsOpenssl,
  async (t) => {
    const { certs } = await dirs(t);
    const { cert, key } = certificate(certs, 'server');
    const server = await metricsServer(t, { tls: { cert: await readFile(cert), key: await readFile(key) } });
    const failures = async (): Promise<Record<string, number>> =>
      byLabel((await scrape(server.metricsUrl)).families, 'petstore_tls_handshake_failures_total', 'reason');
    assert.deepEqual(await failures(), {
      timeout: 0,
      closed: 0,
      plain_http: 0,
      refused_by_client: 0,
      protocol: 0,
      other: 0,
    });
    const { port } = new URL(server.url);
    // Plain HTTP on the TLS port.
    const plain = connect(Number(port), '127.0.0.1', () => plain.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n'));
    plain.on('error', () => {});
    plain.resume(); // it is answered 400 in plain HTTP (plain-http-on-tls.ts): read it to its end
    await new Promise((resolve) => plain.once('close', resolve));
    // A client that offers only a cipher the server does not have.
    const oldCipher = tlsConnect({
      port: Number(port),
      host: '127.0.0.1',
      ca: await readFile(cert),
      maxVersion: 'TLSv1.2',
      ciphers: 'AES128-SHA',
    });
    await assert.rejects(new Promise((_, reject) => oldCipher.once('error', reject)), {
      code: 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
    });
    // A client gone in the middle of its hello.
    const gone = connect(Number(port), '127.0.0.1', () =>
      gone.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]), () => gone.resetAndDestroy()),
    );
    gone.on('error', () => {});
    // The plain request is answered 400 before TLS sees it: counted apart, not as a failed handshake.
    const expected = { timeout: 0, closed: 1, plain_http: 0, refused_by_client: 0, protocol: 1, other: 0 };
    let counted = await failures();
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && Object.values(counted).reduce((a, b) => a + b, 0) < 2) counted = await failures();
    assert.deepEqual(counted, expected);
    assert.equal(metricValue((await scrape(server.metricsUrl)).families, 'petstore_tls_plain_http_total'), 1);
  },
);

test(
  'a TLS connection closed for room in its handshake is counted as closed for room, not as a failed handshake',
  needsOpenssl,
  async (t) => {
    const { certs } = await dirs(t);
    const { cert, key } = certificate(certs, 'server');
    const server = await metricsServer(t, {
      maxConnections: 2,
      tls: { cert: await readFile(cert), key: await readFile(key) },
    });
    const { port } = new URL(server.url);
    // Two connections begin a hello and stop; a third comes and the oldest is closed for it.
    const hello = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]);
    const started: Socket[] = [];
    t.after(() => started.forEach((s) => s.destroy()));
    let firstClosed: Promise<unknown> | undefined;
    for (let i = 0; i < 3; i++) {
      const socket = connect(Number(port), '127.0.0.1');
      started.push(socket);
      firstClosed ??= new Promise((resolve) => socket.once('close', resolve));
      socket.on('error', () => {});
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(hello);
      await new Promise((resolve) => setTimeout(resolve, 80));
    }
    await within(firstClosed as Promise<unknown>, 5000, 'the oldest closed for room');
    assert.deepEqual(
      started.map((s) => s.destroyed),
      [true, false, false],
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const { families } = await scrape(server.metricsUrl);
    assert.equal(metricValue(families, 'petstore_http_evicted_connections_total'), 1);
    assert.deepEqual(byLabel(families, 'petstore_tls_handshake_failures_total', 'reason'), {
      timeout: 0,
      closed: 0,
      plain_http: 0,
      refused_by_client: 0,
      protocol: 0,
      other: 0,
    });
  },
);

test('a missing certificate or key file refuses the start naming it; one without the other is a usage error', async (t) => {
  const { data, certs } = await dirs(t);
  const missing = join(certs, 'missing.pem');
  const both = await runCli(['--port', '0', '--data-dir', data, '--tls-cert', missing, '--tls-key', missing], ENV);
  assert.equal(both.code, 1);
  assert.equal(
    both.stderr,
    `cannot start: cannot read the TLS certificate file ${missing} (ENOENT); give --tls-cert a PEM file this user can read\n`,
  );
  const alone = await runCli(['--port', '0', '--data-dir', data, '--tls-cert', missing], ENV);
  assert.equal(alone.code, 2);
  assert.match(alone.stderr, /--tls-cert and --tls-key go together/);
});

test('plain HTTP on an address beyond loopback logs one warning line; on loopback none', async (t) => {
  const { data } = await dirs(t);
  const open = await spawnServerFor(t, ['--data-dir', data, '--host', '0.0.0.0'], ENV);
  assert.equal(await stopProcess(open), 0); // all its output read
  const warnings = open
    .stderr()
    .split('\n')
    .filter((line) => line.includes('"level":"warn"'));
  assert.equal(warnings.length, 1, open.stderr());
  assert.match(warnings[0] as string, /"msg":"serving plain HTTP on 0\.0\.0\.0: bearer keys travel in clear/);
  const local = await spawnServerFor(t, ['--data-dir', await tempDirFor(t)], ENV);
  assert.equal(await stopProcess(local), 0);
  assert.doesNotMatch(local.stderr(), /"level":"warn"/);
});

test(
  'a certificate that has expired, or is not valid yet, is a warning at start naming its dates; a valid one none',
  needsOpenssl,
  async (t) => {
    const { certs } = await dirs(t);
    const cases: Array<[string, string, string, RegExp | undefined]> = [
      [
        'expired',
        '20000101000000Z',
        '20010101000000Z',
        /^the TLS certificate has expired: clients will refuse to connect; renew it/,
      ],
      [
        'future',
        '20990101000000Z',
        '21000101000000Z',
        /^the TLS certificate is not valid yet: clients will refuse to connect/,
      ],
      ['valid', '20000101000000Z', '21000101000000Z', undefined],
    ];
    for (const [name, start, end, warning] of cases) {
      const { cert, key } = certificateFor(certs, name, start, end);
      const server = await spawnServerFor(
        t,
        ['--data-dir', await tempDirFor(t), '--tls-cert', cert, '--tls-key', key],
        ENV,
      );
      assert.equal(await stopProcess(server), 0);
      const warnings = server
        .stderr()
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, string>)
        .filter((line) => line.level === 'warn');
      if (warning === undefined) {
        assert.deepEqual(warnings, [], name);
        continue;
      }
      assert.equal(warnings.length, 1, `${name}: ${server.stderr()}`);
      assert.match(warnings[0]?.msg as string, warning);
      assert.equal(warnings[0]?.certificate, cert);
      assert.equal(warnings[0]?.subject, 'CN=127.0.0.1');
      assert.equal(
        warnings[0]?.[name === 'expired' ? 'notAfter' : 'notBefore'],
        name === 'expired' ? '2001-01-01T00:00:00.000Z' : '2099-01-01T00:00:00.000Z',
      );
    }
  },
);

test(
  'plain HTTP sent to the HTTPS port gets a 400 saying the port speaks TLS, counted and logged; HTTPS goes on; a silent client is closed at --headers-timeout',
  needsOpenssl,
  async (t) => {
    const { data, certs } = await dirs(t);
    const { cert, key } = certificate(certs, 'server');
    const server = await spawnServerFor(
      t,
      ['--data-dir', data, '--tls-cert', cert, '--tls-key', key, '--metrics-port', '0', '--headers-timeout', '400'],
      ENV,
    );
    const port = Number(new URL(server.url).port);
    const plain = await rawRequest(`http://127.0.0.1:${port}`, 'GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const [head, body] = plain.split('\r\n\r\n') as [string, string];
    assert.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(head, /\r\nconnection: close\r\n/);
    assert.deepEqual(JSON.parse(body), {
      code: 'invalid_request',
      message: 'this port speaks HTTPS (TLS): send the request with https://',
      status: 400,
    });
    const ca = await readFile(cert);
    assert.equal((await get(server.url, '/v1/pets', ca)).status, 200, 'TLS is served as before, after a plain request');
    // A client that sends nothing is closed at the handshake's deadline, as before the first bytes were looked at.
    const silent = connect(port, '127.0.0.1');
    t.after(() => silent.destroy());
    const closed = await within(
      new Promise<boolean>((resolve) => silent.once('close', () => resolve(true))),
      5000,
      'the silent connection is closed',
    );
    assert.ok(closed);
    const metricsUrl = (JSON.parse(server.stdout().split('\n')[0] as string) as { metrics: string }).metrics;
    const { families } = await scrape(metricsUrl);
    assert.equal(metricValue(families, 'petstore_tls_plain_http_total'), 1);
    assert.equal(await stopProcess(server), 0);
    const logged = server
      .stdout()
      .split('\n')
      .filter((line) => line.includes('plain HTTP on the HTTPS port'));
    assert.equal(logged.length, 1, server.stdout());
    assert.equal((JSON.parse(logged[0] as string) as { remote: string }).remote, '127.0.0.1');
  },
);

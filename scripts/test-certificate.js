'use strict';
/**
 * The self-signed certificate of the tests and the benchmarks that serve HTTPS (test/tls-support.ts,
 * bench/unread.js): one recipe for both, here because bench/ does not import test/.
 */
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');

/** A certificate for 127.0.0.1, valid for a day, and its key (EC P-256, or RSA 2048): `<name>.crt` and `<name>.key` in `dir`. */
function certificate(dir, name, type = 'ec') {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const newKey =
    type === 'ec' ? ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'] : ['-newkey', 'rsa:2048'];
  const subject = ['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
  execFileSync(
    'openssl',
    ['req', '-x509', ...newKey, '-nodes', '-days', '1', ...subject, '-keyout', key, '-out', cert],
    {
      stdio: 'ignore',
    },
  );
  return { cert, key };
}

module.exports = { certificate };

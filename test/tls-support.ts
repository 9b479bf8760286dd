/** Test certificates made with openssl, for the tests that serve HTTPS. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false; // not installed: the tests that need a certificate say so and skip
  }
}

/** Test options: skipped, saying why, where openssl is missing. */
export const needsOpenssl = hasOpenssl() ? {} : { skip: 'openssl is not installed: no test certificate can be made' };

/** A self-signed certificate for 127.0.0.1 and its key (EC P-256, or RSA 2048), as files in `dir`. */
export function certificate(dir: string, name: string, type: 'ec' | 'rsa' = 'ec'): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const newKey =
    type === 'ec' ? ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'] : ['-newkey', 'rsa:2048'];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      ...newKey,
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

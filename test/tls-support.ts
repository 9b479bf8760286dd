/** Test certificates made with openssl, for the tests that serve HTTPS. */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

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

/** The recipe bench/unread.js uses too, in scripts/ (bench does not import test/). */
const shared = require(resolve(__dirname, '../../scripts/test-certificate.js')) as {
  certificate(dir: string, name: string, type: 'ec' | 'rsa'): { cert: string; key: string };
};

/** A self-signed certificate for 127.0.0.1 and its key (EC P-256, or RSA 2048), as files in `dir`. */
export function certificate(dir: string, name: string, type: 'ec' | 'rsa' = 'ec'): { cert: string; key: string } {
  return shared.certificate(dir, name, type);
}

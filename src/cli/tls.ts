import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { errorCode } from '../lib/system-error.js';
import { CommandError, UsageError } from './errors.js';

/** The certificate and key files of --tls-cert and --tls-key, read; undefined for plain HTTP. */
export function readTlsFiles(
  certFile: string | undefined,
  keyFile: string | undefined,
): { cert: Buffer; key: Buffer } | undefined {
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined)
    throw new UsageError('--tls-cert and --tls-key go together: give both, or neither for plain HTTP');
  const tls = { cert: read(certFile, 'TLS certificate', '--tls-cert'), key: read(keyFile, 'TLS key', '--tls-key') };
  if (!belongTogether(tls.cert, tls.key)) {
    throw new CommandError(
      `the TLS key ${keyFile} does not belong to the TLS certificate ${certFile}: its public key is not the ` +
        `certificate's; give --tls-key the key the certificate was made for`,
    );
  }
  return tls;
}

/**
 * Whether the key is the private half of the (first) certificate's public key, whatever their types:
 * OpenSSL itself compares them only when both are RSA or both EC. A file that does not parse is left
 * to the TLS set-up, which refuses it with its own message.
 */
function belongTogether(cert: Buffer, key: Buffer): boolean {
  try {
    return new X509Certificate(cert).checkPrivateKey(createPrivateKey(key));
  } catch (error) {
    if (errorCode(error) === undefined) throw error;
    return true;
  }
}

function read(path: string, what: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    const code = errorCode(error);
    if (code === undefined) throw error;
    throw new CommandError(
      `cannot read the ${what} file ${path} (${code}); give ${flag} a PEM file this user can read`,
    );
  }
}

/** A certificate of the chain that clients will refuse at `now`: expired, or not valid yet. */
export interface CertificateDateProblem {
  subject: string;
  problem: 'expired' | 'not yet valid';
  /** When it expired, or when it becomes valid (ISO 8601). */
  date: string;
}

/**
 * The certificates of a PEM chain whose validity period does not hold `now`. A block that is not a
 * certificate is left to the TLS set-up, which refuses it.
 */
export function certificateDateProblems(pem: Buffer, now = new Date()): CertificateDateProblem[] {
  const problems: CertificateDateProblem[] = [];
  for (const block of pem.toString('latin1').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ??
    []) {
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(block);
    } catch (error) {
      if (errorCode(error) === undefined) throw error;
      continue;
    }
    const subject = certificate.subject.replace(/\n/g, ', ');
    const [from, to] = [new Date(certificate.validFrom), new Date(certificate.validTo)];
    if (now > to) problems.push({ subject, problem: 'expired', date: to.toISOString() });
    else if (now < from) problems.push({ subject, problem: 'not yet valid', date: from.toISOString() });
  }
  return problems;
}

/** Whether an address to listen on can only be reached from this machine. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

import { readFileSync } from 'node:fs';
import { errorCode } from '../lib/system-error.js';
import { CommandError, UsageError } from './errors.js';

/** The certificate and key files of --tls-cert and --tls-key, read; undefined for plain HTTP. */
export function readTlsFiles(certFile: string | undefined, keyFile: string | undefined): { cert: Buffer; key: Buffer } | undefined {
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) throw new UsageError('--tls-cert and --tls-key go together: give both, or neither for plain HTTP');
  return { cert: read(certFile, 'TLS certificate'), key: read(keyFile, 'TLS key') };
}

function read(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    const code = errorCode(error);
    if (code === undefined) throw error;
    throw new CommandError(`cannot read the ${what} file ${path} (${code})`);
  }
}

/** Whether an address to listen on can only be reached from this machine. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

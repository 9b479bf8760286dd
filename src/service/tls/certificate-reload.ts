/**
 * Which TLS pair new connections get: the files of --tls-cert and --tls-key are read again on
 * `reload()` (SIGHUP) and when they change on disk, and a pair that loads replaces the served one
 * through `setSecureContext`; connections already open keep the pair they were made with. A pair
 * that does not load is refused with one log line naming the file, and the served pair stays.
 */
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type Server as TlsServer } from 'node:tls';
import type { Logger } from '../../lib/logger.js';
import { errorCode } from '../../lib/system-error.js';
import type { ServiceMetrics } from '../metrics/service-metrics.js';

/**
 * How often the files are read: polled, not watched, because certbot and editors replace a file (a
 * rename, or a new target of the symlink in /etc/letsencrypt/live), which an inotify watch of the old
 * file never sees, and a watch of its directory misses a swap further up (Kubernetes' `..data`).
 */
const POLL_INTERVAL_MS = 1000;

/** The pair to serve, as PEM contents, and the files they were read from (to read again), if any. */
export interface TlsOptions {
  cert: string | Buffer;
  key: string | Buffer;
  certFile?: string | undefined;
  keyFile?: string | undefined;
}

export interface TlsFiles {
  cert: string;
  key: string;
}

interface Pair {
  cert: Buffer;
  key: Buffer;
}

/** A pair read from the files, or the file that could not be read and why. */
type Reading = { pair: Pair; signature: string } | { file: string; why: string; signature: string };

/** A pair that loads, or the file at fault and why. */
type Loaded = { expiry: number; subject: string } | { file: string; why: string };

export class CertificateReload {
  readonly #server: TlsServer;
  readonly #files: TlsFiles | undefined;
  readonly #logger: Logger;
  #served: string;
  #expiry: number;
  /** What the last poll read, when it differed from the served pair: acted on once a second poll reads the same. */
  #pending: string | undefined;
  /** The last pair refused by a poll, so that a bad pair left on disk is logged once, not every second. */
  #refused: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #counts = { loaded: 0, refused: 0 };

  /** Serves `pair` (already checked by the start), read from `files`, and polls them until the server closes. */
  constructor(server: TlsServer, pair: TlsOptions, files: TlsFiles | undefined, logger: Logger) {
    this.#server = server;
    this.#files = files;
    this.#logger = logger;
    const served = { cert: Buffer.from(pair.cert), key: Buffer.from(pair.key) };
    this.#served = signature(served);
    this.#expiry = expiryOf(served.cert);
    server.once('close', () => this.close());
    this.#schedule();
  }

  /** When the served certificate expires, in Unix seconds: its first (leaf) certificate's notAfter. */
  get expiry(): number {
    return this.#expiry;
  }

  /** Pairs loaded and refused since the start, by reloads and polls alike. */
  get counts(): { readonly loaded: number; readonly refused: number } {
    return this.#counts;
  }

  /** Reads both files now and serves them if they load (SIGHUP): resolves whether they did. */
  async reload(): Promise<boolean> {
    if (this.#files === undefined) {
      this.#logger.info('no TLS files to read again: the pair was given as contents (tls.certFile, tls.keyFile unset)');
      return false;
    }
    const reading = await this.#read();
    this.#pending = undefined;
    return this.#load(reading);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#closed || this.#files === undefined) return;
    // Unref'd: the poll alone never keeps the process alive.
    this.#timer = setTimeout(() => void this.#poll(), POLL_INTERVAL_MS).unref();
  }

  async #poll(): Promise<void> {
    const reading = await this.#read();
    if (this.#closed) return;
    const changed = reading.signature !== this.#served;
    // Two polls alike: a renewal that replaces the certificate and then the key is not caught half-way.
    if (changed && reading.signature === this.#pending && reading.signature !== this.#refused) this.#load(reading);
    this.#pending = changed ? reading.signature : undefined;
    this.#schedule();
  }

  #load(reading: Reading): boolean {
    const files = this.#files as TlsFiles;
    const loaded = 'pair' in reading ? check(reading.pair, files) : reading;
    if ('why' in loaded) {
      this.#counts.refused += 1;
      this.#refused = reading.signature;
      const still = 'new connections still get the previous certificate';
      const { file, why } = loaded;
      this.#logger.error(`the TLS pair was not reloaded: ${file} ${why}; ${still}`, undefined, { file });
      return false;
    }
    const { pair } = reading as { pair: Pair };
    this.#server.setSecureContext({ cert: pair.cert, key: pair.key });
    this.#counts.loaded += 1;
    this.#served = reading.signature;
    this.#refused = undefined;
    this.#expiry = loaded.expiry;
    this.#logger.info('TLS certificate reloaded: new connections get it, open ones keep theirs', {
      certificate: files.cert,
      subject: loaded.subject,
      notAfter: new Date(loaded.expiry * 1000).toISOString(),
    });
    return true;
  }

  async #read(): Promise<Reading> {
    const files = this.#files as TlsFiles;
    const [cert, key] = await Promise.all([readPem(files.cert), readPem(files.key)]);
    if (typeof cert === 'string') return { file: files.cert, why: cert, signature: `unreadable ${files.cert} ${cert}` };
    if (typeof key === 'string') return { file: files.key, why: key, signature: `unreadable ${files.key} ${key}` };
    return { pair: { cert, key }, signature: signature({ cert, key }) };
  }
}

/**
 * The pair `listen` serves with `tls`, reloaded from `tls.certFile` and `tls.keyFile` when given;
 * with `metrics`, its expiry and reloads are measured.
 */
export function reloadCertificates(
  server: TlsServer,
  tls: TlsOptions,
  logger: Logger,
  metrics: ServiceMetrics | undefined,
): CertificateReload {
  const { certFile, keyFile } = tls;
  const files = certFile !== undefined && keyFile !== undefined ? { cert: certFile, key: keyFile } : undefined;
  const certificates = new CertificateReload(server, tls, files, logger);
  metrics?.watchCertificates(certificates);
  return certificates;
}

/** The file's bytes, or why it cannot be read (`cannot be read (ENOENT)`). */
async function readPem(path: string): Promise<Buffer | string> {
  try {
    return await readFile(path);
  } catch (error) {
    const code = errorCode(error);
    if (code === undefined) throw error;
    return `cannot be read (${code})`;
  }
}

/** Whether the pair would serve: each file parses, the key is the certificate's, the certificate has not expired. */
function check(pair: Pair, files: TlsFiles): Loaded {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pair.cert);
  } catch (error) {
    return { file: files.cert, why: `is not a PEM certificate (${codeOf(error)})` };
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(pair.key);
  } catch (error) {
    return { file: files.key, why: `is not a PEM private key (${codeOf(error)})` };
  }
  // OpenSSL compares the pair only when their types agree; the certificate's own check compares any.
  if (!certificate.checkPrivateKey(key)) {
    return { file: files.key, why: `does not belong to the certificate ${files.cert}` };
  }
  try {
    createSecureContext({ cert: pair.cert, key: pair.key });
  } catch (error) {
    return { file: files.cert, why: `cannot be used with its key (${codeOf(error)})` };
  }
  const expiry = expiryOf(pair.cert);
  const expired = new Date(expiry * 1000);
  if (expired.getTime() <= Date.now()) return { file: files.cert, why: `expired on ${expired.toISOString()}` };
  return { expiry, subject: certificate.subject.replace(/\n/g, ', ') };
}

/** The error code of a parse failure; anything without one is not a parse failure and is rethrown. */
function codeOf(error: unknown): string {
  const code = errorCode(error);
  if (code === undefined) throw error;
  return code;
}

function expiryOf(cert: Buffer): number {
  return Math.floor(Date.parse(new X509Certificate(cert).validTo) / 1000);
}

function signature(pair: Pair): string {
  return createHash('sha256').update(pair.cert).update('\0').update(pair.key).digest('hex');
}

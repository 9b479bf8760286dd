import { resolve } from 'node:path';
import { keyFilePath, readKeyFile, withdrawFirstKey } from '../auth/key-file.js';
import { type JsonLogger, jsonLogger } from '../lib/logger.js';
import { monotonicMs } from '../lib/monotonic.js';
import { type ListenOptions, listen, type RunningServer } from '../service/listen.js';
import { activatedSocket } from '../service/socket-activation.js';
import { envKeys, type Config } from './config.js';
import { certificateDateProblems, isLoopback, readTlsFiles } from './tls.js';
import { FailedStart } from './failed-start.js';

/**
 * Serves the API as configured until SIGTERM or SIGINT, then stops gracefully and exits; `warning`,
 * when given, is logged first (a database password on the command line).
 */
export async function serve(config: Config, env: NodeJS.ProcessEnv, warning?: string): Promise<void> {
  const logger = jsonLogger(config.logLevel);
  if (warning !== undefined) logger.warn(warning);
  const keys = envKeys(env);
  // Under systemd socket activation the socket unit's address serves; --port and --host are not used.
  const socket = activatedSocket(env);
  const tls = readTlsFiles(config.tlsCert, config.tlsKey);
  if (tls !== undefined) warnOfCertificateDates(tls.cert, config, logger);
  // Absolute: an installed `petstore` takes ./data of whatever directory it was started in.
  const dataDir = resolve(config.dataDir);
  const keyHome = config.databaseUrl === undefined ? `${dataDir}/keys.json` : 'the database';
  const tlsFiles = tls === undefined ? undefined : { ...tls, certFile: config.tlsCert, keyFile: config.tlsKey };
  const running = await start(
    { ...config, fd: socket?.fd, tls: tlsFiles, keys, logger },
    { dataDir, keyHome, databaseUrl: config.databaseUrl },
  );
  const where = config.databaseUrl === undefined ? { dataDir } : { database: 'PostgreSQL' };
  // Before the line that says it listens: whoever reads that line may signal at once.
  stopOnSignals(running, logger, where);
  // SIGHUP would end the process by default; here it reads the TLS pair again (ExecReload= of the unit).
  process.on('SIGHUP', () => {
    if (tls === undefined) logger.info('SIGHUP: plain HTTP, no TLS pair to read again; nothing else is reloaded by it');
    else void running.reloadTls();
  });
  const named = socket?.name === undefined ? '' : ` (${socket.name})`;
  const inherited = socket === undefined ? undefined : `fd ${socket.fd}${named}`;
  const url = `${running.url}${config.basePath ?? ''}/v1`;
  logger.info('listening', { url, ...where, pid: process.pid, metrics: running.metricsUrl, socket: inherited });
  // With an inherited socket, the address is the socket unit's, not --host.
  const host = socket === undefined ? config.host : new URL(running.url).hostname.replace(/^\[(.*)\]$/, '$1');
  if (tls === undefined && !isLoopback(host)) {
    logger.warn(
      `serving plain HTTP on ${host}: bearer keys travel in clear; ` +
        'use --tls-cert and --tls-key, or a TLS proxy in front',
    );
  }
  if (
    keys.length === 0 &&
    config.databaseUrl === undefined &&
    (readKeyFile(keyFilePath(config.dataDir)) ?? []).length === 0
  ) {
    logger.warn('no API key is configured: every request under /v1 is refused until one is created with "keys create"');
  }
}

/** A certificate expired or not valid yet serves, with a warning: clients refuse it, the operator must know why. */
function warnOfCertificateDates(cert: Buffer, config: Config, logger: JsonLogger): void {
  for (const { subject, problem, date } of certificateDateProblems(cert)) {
    const why = problem === 'expired' ? 'has expired' : 'is not valid yet';
    logger.warn(`the TLS certificate ${why}: clients will refuse to connect; renew it, or check this machine's clock`, {
      certificate: config.tlsCert,
      subject,
      [problem === 'expired' ? 'notAfter' : 'notBefore']: date,
    });
  }
}

/**
 * Listens; a key generated on the way is shown once the outcome is known: with the listening line, or after
 * the reason the start failed (and withdrawn then, when it can be).
 */
async function start(
  options: ListenOptions,
  store: { dataDir: string; keyHome: string; databaseUrl: string | undefined },
): Promise<RunningServer> {
  let generated: string | undefined;
  let running: RunningServer;
  try {
    running = await listen({ ...options, onKeyGenerated: (key) => void (generated = key) });
  } catch (error) {
    if (generated === undefined) throw error;
    if (store.databaseUrl === undefined && (await withdrawFirstKey(store.dataDir, generated))) {
      const said = 'No API key is kept from this start: the next start that serves generates one and shows it.\n';
      throw new FailedStart(error, said);
    }
    throw new FailedStart(
      error,
      `A key was generated before the start failed. It is kept (only its SHA-256 hash, in ${store.keyHome}) ` +
        `and works once the server starts; it is shown only this once:\n\n  ${generated}\n\n`,
    );
  }
  if (generated !== undefined) {
    process.stderr.write(
      `No API key was configured, so one was generated. It is shown only this once; only its SHA-256 hash is kept in ` +
        `${store.keyHome}:\n\n  ${generated}\n\n`,
    );
  }
  return running;
}

/** SIGTERM and SIGINT stop the server gracefully, then exit: 0 when the store closed durable, 1 otherwise. */
function stopOnSignals(running: RunningServer, logger: JsonLogger, where: Record<string, string>): void {
  let stopping = false;
  const stop = (signal: string): void => {
    // A second signal must not end the process by signal half-way (journal and lock left behind).
    if (stopping) {
      logger.info('already stopping; finishing the requests in flight', { signal });
      return;
    }
    stopping = true;
    logger.info('stopping', { signal });
    const started = monotonicMs();
    running.close().then(
      // close() has already written out the gathered request lines (createPetstore's close flushes its logger).
      () => {
        logger.info('stopped', {
          signal,
          ms: Math.round(monotonicMs() - started),
          ...where,
          result: 'requests in flight finished, store closed and durable, lock released',
        });
        process.exit(0);
      },
      (error: unknown) => {
        logger.error('stopped with an error; the journal holds every acknowledged pet', error);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

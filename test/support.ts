/**
 * The one place tests start servers: on port 0, over a temporary data directory, torn down with
 * `closeAllConnections()` before `close()` so no keep-alive socket holds a test open.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { TestContext } from 'node:test';
import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type RequestListener as NodeListener,
} from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  listen,
  silentLoggerForTests,
  type ListenOptions,
  type PetstoreService,
  type RunningServer,
} from './package.js';

// Fixtures written by hand (a pets.json, a journal) get the modes of the usual umask, whatever the
// developer's: under umask 002 they would be group-writable, which the server refuses, and tests
// that mean that set the mode themselves. What the server makes has fixed modes under any umask
// (directories.test.ts; quick-start.test.ts starts it under 002, 022 and 077).
process.umask(0o022);

export const TEST_KEY = 'test-key-0123456789abcdef';
export const SERVER_JS = resolve(__dirname, '../server.js');

export async function tempDir(prefix = 'petstore-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** A temporary directory that is removed when the test `t` ends. */
export async function tempDirFor(t: TestContext, prefix?: string): Promise<string> {
  const dir = await tempDir(prefix);
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  /** Raw header pairs as received, to check what was sent exactly once. */
  rawHeaders: string[];
  text: string;
  /** The body parsed with JSON.parse (numbers beyond 2^53 lose digits: compare `text` for those). */
  json: unknown;
}

export interface RequestOptions {
  /** Header pairs; a name may repeat. `authorization` defaults to the test key unless `auth: false`. */
  headers?: Array<[string, string]>;
  body?: string | Buffer;
  auth?: boolean | string;
}

export function request(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<Response> {
  const url = new URL(baseUrl);
  // Header pairs go out as a raw array (so a test can repeat one), and Node adds no Host to those.
  const headers: Array<[string, string]> = [['host', url.host], ...(options.headers ?? [])];
  const auth = options.auth ?? true;
  if (auth !== false) headers.push(['authorization', `Bearer ${auth === true ? TEST_KEY : auth}`]);
  if (options.body !== undefined) headers.push(['content-length', String(Buffer.byteLength(options.body))]);
  return new Promise((resolvePromise, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        agent: false,
        headers: headers.flat(),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? undefined : JSON.parse(text);
          } catch {
            json = undefined; // not JSON: the test asserts on `text` or on json being undefined
          }
          resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, text, json });
        });
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** Sends bytes as they are on a fresh TCP connection and returns everything the server answers. */
export function rawRequest(baseUrl: string, bytes: string | Buffer, timeoutMs = 5000): Promise<string> {
  const url = new URL(baseUrl);
  return new Promise((resolvePromise, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (error) => {
      clearTimeout(timer);
      if (chunks.length > 0) resolvePromise(Buffer.concat(chunks).toString('latin1'));
      else reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolvePromise(Buffer.concat(chunks).toString('latin1'));
    });
    socket.write(bytes);
  });
}

export interface TestServer {
  url: string;
  dataDir: string;
  running: RunningServer;
  request(method: string, path: string, options?: RequestOptions): Promise<Response>;
  /** Graceful stop; the data directory stays. */
  stop(): Promise<void>;
  /** Stops and removes the data directory. */
  close(): Promise<void>;
}

/** Starts the service in this process on port 0 with the test key over a temporary (or given) directory. */
export async function startServer(options: Partial<ListenOptions> = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? (await tempDir());
  const running = await listen({
    port: 0,
    host: '127.0.0.1',
    keys: [TEST_KEY],
    logger: silentLoggerForTests,
    ...options,
    dataDir,
  });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    running.server.closeAllConnections();
    await running.close();
  };
  return {
    url: running.url,
    dataDir,
    running,
    request: (method, path, requestOptions) => request(running.url, method, path, requestOptions),
    stop,
    close: async () => {
      await stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * An embedder's own node:http server on port 0, with Node's defaults: the pet store first, then `own`
 * for what it does not serve. Server and pet store are closed when the test `t` ends; the URL is returned.
 */
export async function embedServer(t: TestContext, petstore: PetstoreService, own?: NodeListener): Promise<string> {
  const server = createHttpServer((req, res) => {
    if (own === undefined) petstore.handler(req, res);
    else petstore.handler(req, res, () => own(req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await petstore.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The error a start on `dir` fails with; a server that starts anyway is stopped and the test fails. */
export async function startError(dir: string): Promise<Error> {
  try {
    const server = await startServer({ dataDir: dir });
    await server.stop();
  } catch (error) {
    return error as Error;
  }
  throw new Error(`the server started on ${dir}`);
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

/**
 * Runs `node dist/server.js` with `args` on port 0 and resolves once it logs that it listens.
 * Rejects (with what it printed) if it exits first, or after `timeoutMs`.
 */
export function spawnServer(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 10_000): Promise<ServerProcess> {
  return launchServer(
    process.execPath,
    [SERVER_JS, '--port', '0', ...args],
    { env: { PATH: process.env.PATH, ...env } },
    timeoutMs,
  );
}

/**
 * Runs `command args` — a server started otherwise (`npm start`, a copy of server.js, as another
 * user) — and resolves once it logs that it listens; rejects as spawnServer does.
 */
export function launchServer(
  command: string,
  args: string[],
  options: Omit<SpawnOptions, 'stdio'>,
  timeoutMs = 60_000, // only stops a hang: a CLI run on a busy machine has taken 18 s
): Promise<ServerProcess> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (err += s));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start in ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`));
    }, timeoutMs);
    const onData = (): void => {
      const match = /"msg":"listening","url":"(https?:\/\/[^"]+)\/v1"/.exec(out);
      if (match === null) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      resolvePromise({ child, url: match[1] as string, stdout: () => out, stderr: () => err, exited });
    };
    child.stdout?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening\nstdout: ${out}\nstderr: ${err}`));
    });
  });
}

/**
 * Runs `node dist/server.js args` to completion (for `--help`, `keys …`, start-up failures); `as`
 * runs another copy of server.js, or as another user.
 */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 60_000, // only stops a hang: a CLI run on a busy machine has taken 18 s
  as: { serverJs?: string; user?: { uid: number; gid: number } } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [as.serverJs ?? SERVER_JS, ...args], {
    ...as.user,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((r) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      r({ code, stdout, stderr });
    }),
  );
}

/** A port of 127.0.0.1 that was free a moment ago (for a server that logs no listening line). */
export function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolvePromise(port));
    });
  });
}

/**
 * `node dist/server.js args` at a log level that prints no "listening" line (error, silent): on a
 * port of its own, resolved once /healthz answers there; killed when the test `t` ends.
 */
export async function spawnQuietServerFor(
  t: TestContext,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [SERVER_JS, '--port', String(port), ...args], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await request(url, 'GET', '/healthz', { auth: false }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (up) return { child, url, stdout: () => out, stderr: () => err, exited };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the server did not come up\n${out}\n${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `promise`, or a rejection naming `what` after `ms`, so that a test that waits for a point is bounded. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` (which may ask a server or a database) every 20 ms until it holds; fails naming `what` after `ms`. */
export async function waitFor(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Stops a spawned server with a signal and returns its exit code, once all its output has been read. */
export async function stopProcess(server: ServerProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  const closed = new Promise<void>((r) => server.child.once('close', () => r()));
  server.child.kill(signal);
  await within(closed, 5000, `exit after ${signal}`);
  return server.child.exitCode;
}

/** spawnServer(), and the process is killed when the test `t` ends, whatever happens. */
export async function spawnServerFor(
  t: TestContext,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<ServerProcess> {
  const server = await spawnServer(args, env);
  t.after(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

/**
 * Runs `node file` from the package root with nothing of this process's environment but PATH, killed
 * after `timeoutMs`. A file inside the package folder imports `petstore-api` as an embedder would.
 */
export function runNode(
  file: string,
  timeoutMs: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [file], {
    cwd: resolve(__dirname, '../..'),
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((r) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      r({ code, signal, stdout, stderr });
    }),
  );
}

/**
 * systemd's part in socket activation, played by bench/socket-launcher.py: it holds a listening socket
 * of 127.0.0.1 and starts and stops servers on it as fd 3, as systemd does (its header says how).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { TestContext } from 'node:test';
import { SERVER_JS, waitFor, within } from './support.js';

const LAUNCHER = resolve(__dirname, '../../bench/socket-launcher.py');

/** Test options: skipped, saying why, where python3 is missing. */
export const needsPython =
  spawnSync('python3', ['--version']).status === 0 ? {} : { skip: 'python3 is not installed: no launcher' };

export interface SocketLauncher {
  /** The port of the socket it holds. */
  port: number;
  /** Starts a server on the socket, its stdout and stderr into `log`; resolves once it logs that it listens. */
  start(log: string): Promise<void>;
  /** SIGTERM to the server, and its exit code once it has exited. */
  stop(): Promise<number>;
}

/**
 * A launcher holding a socket for servers run with `args` (of `serverJs`, the built one by default),
 * ended (and its server killed) when `t` ends.
 */
export async function socketLauncher(
  t: TestContext,
  args: string[],
  env: NodeJS.ProcessEnv,
  serverJs = SERVER_JS,
): Promise<SocketLauncher> {
  const child = spawn('python3', [LAUNCHER, process.execPath, serverJs, ...args], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  t.after(async () => {
    child.stdin.end();
    await within(exited, 10_000, 'the launcher ends');
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const answer = async (): Promise<string> => {
    const next = await within(lines.next(), 30_000, 'the launcher answers');
    if (next.done === true) throw new Error('the launcher ended');
    return next.value;
  };
  const port = Number(await answer());
  return {
    port,
    async start(log) {
      child.stdin.write(`start ${log}\n`);
      await answer();
      const listening = (): boolean => {
        try {
          return readFileSync(log, 'utf8').includes('"msg":"listening"');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
          throw error;
        }
      };
      await waitFor(listening, 60_000, `the server logs that it listens (${log})`);
    },
    async stop() {
      child.stdin.write('stop\n');
      return Number(await answer());
    },
  };
}

/** The log file of the `n`th server a test starts, in `dir`. */
export const serverLog = (dir: string, n: number): string => join(dir, `server-${n}.log`);

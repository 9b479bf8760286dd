/**
 * systemd's part in socket activation, played by a small Python process: it binds and listens on a
 * TCP socket of 127.0.0.1, never accepts on it, and starts servers with it as fd 3 and LISTEN_FDS,
 * LISTEN_PID (the child's own pid, known only after fork, which Node's spawn cannot set) and
 * LISTEN_FDNAMES set, as systemd does; `stop` sends SIGTERM and waits, as `systemctl stop` does.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { TestContext } from 'node:test';
import { SERVER_JS, waitFor, within } from './helpers.js';

const LAUNCHER = `
import os, signal, socket, sys
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen(1024)
print(s.getsockname()[1], flush=True)
child = None
for line in sys.stdin:
    words = line.split()
    if words[0] == 'start':
        log = words[1]
        child = os.fork()
        if child == 0:
            os.dup2(s.fileno(), 3)
            # When the socket is fd 3 already, dup2 does nothing and leaves it close-on-exec.
            os.set_inheritable(3, True)
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(out, 1)
            os.dup2(out, 2)
            env = dict(os.environ, LISTEN_FDS='1', LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES='petstore.socket')
            os.execve(sys.argv[1], sys.argv[1:], env)
        print(child, flush=True)
    elif words[0] == 'stop':
        os.kill(child, signal.SIGTERM)
        print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]), flush=True)
        child = None
if child is not None:
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
`;

export interface SocketLauncher {
  /** The port of the socket it holds. */
  port: number;
  /** Starts a server on the socket, its stdout and stderr into `log`; resolves once it logs that it listens. */
  start(log: string): Promise<void>;
  /** SIGTERM to the server, and its exit code once it has exited. */
  stop(): Promise<number>;
}

/** A launcher holding a socket for servers run with `args`, ended (and its server killed) when `t` ends. */
export async function socketLauncher(t: TestContext, args: string[], env: NodeJS.ProcessEnv): Promise<SocketLauncher> {
  const child = spawn('python3', ['-c', LAUNCHER, process.execPath, SERVER_JS, ...args],
    { env: { PATH: process.env['PATH'], ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
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

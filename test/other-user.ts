/**
 * Running the server as another user (`nobody`) wherever the repository lives. A clone in a private
 * directory (/root, `mktemp -d`) is closed to that user, and under umask 077 so are the files tsc
 * writes: each test gets a copy of the built package in a directory of its own under the system's
 * temporary directory, open to everyone to read, and removed after the test.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { launchServer, type ServerProcess } from './support.js';

export const NOBODY = 65534;
/** `nobody` and its group, as spawn options. */
export const OTHER_USER = { uid: NOBODY, gid: NOBODY };
const ROOT = resolve(__dirname, '../..');

/** Whether `nobody` can run node and reach the temporary directory here: false, or why not (a skip reason). */
function whyNot(): string | false {
  if (process.getuid?.() !== 0) return 'needs root to run the server as another user';
  const probe = spawnSync(process.execPath, ['-e', `require('node:fs').accessSync(${JSON.stringify(tmpdir())}, 1)`], {
    ...OTHER_USER,
    stdio: 'ignore',
  });
  if (probe.error !== undefined || probe.status !== 0) {
    return `uid ${NOBODY} cannot run ${process.execPath} or enter ${tmpdir()} here, so no server can run as another user`;
  }
  return false;
}

/** For a test's `skip` option: false where a server can run as `nobody`, or the reason it cannot. */
export const asOtherUser = whyNot();

/** A copy of the built package that `nobody` can run, removed after `t`: the path of its server.js. */
export function serverForOtherUser(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-package-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), {
    recursive: true,
    filter: (source) => source !== join(ROOT, 'dist', 'test'),
  });
  openToAll(dir);
  return join(dir, 'dist', 'server.js');
}

/** Directories 0755 and files 0644 below and including `path`, whatever the umask made them. */
function openToAll(path: string): void {
  chmodSync(path, 0o755);
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.isDirectory()) openToAll(join(path, entry.name));
    else chmodSync(join(path, entry.name), 0o644);
  }
}

/** Starts `node serverJs args` as `nobody` on port 0; resolves once it listens. Killed after `t`. */
export async function serveAsOtherUser(
  t: TestContext,
  serverJs: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<ServerProcess> {
  const server = await launchServer(process.execPath, [serverJs, '--port', '0', ...args], {
    ...OTHER_USER,
    env: { PATH: process.env.PATH, ...env },
  });
  t.after(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

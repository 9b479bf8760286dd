/**
 * A throwaway PostgreSQL cluster for the tests: Debian's `postgresql` package (installed here when it
 * is missing, CI=true and we are root), `initdb` and `pg_ctl` run as the `postgres` user in a
 * temporary directory, on a free port on 127.0.0.1 only, its socket in that directory. `destroy()`
 * stops it (immediate) and removes the directory; a process exit does the same as a last resort.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe } from 'node:test';
import postgres from 'postgres';
import { findOrInstall } from './debian-package.js';
import { freePort } from './support.js';

export const SKIP_REASON = 'PostgreSQL not installed: apt-get install postgresql, or run .ci/run';

/** The bin directory of the newest installed PostgreSQL, or undefined. */
function findBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^[0-9]+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  return versions
    .map((v) => join(root, v, 'bin'))
    .find((bin) => existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl')));
}

/**
 * Where initdb and pg_ctl are. Missing: on CI as root the package is installed; on CI otherwise this
 * throws (CI must run these tests); elsewhere undefined, and the tests are skipped.
 */
export function postgresBin(): string | undefined {
  return findOrInstall(findBin, 'postgresql', SKIP_REASON);
}

function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined; // not root: the cluster runs as ourselves
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (line === undefined) throw new Error('running as root, but there is no "postgres" user to run the cluster as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

export interface Cluster {
  port: number;
  /** A new, empty database on this cluster, and its URL. */
  createDatabase(): Promise<string>;
  /** pg_ctl stop -m immediate: as if the database machine went away. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Copies the stopped cluster's directory aside: a standby that will receive nothing more. */
  copyData(): Promise<void>;
  /** Puts that copy in place of the stopped cluster's directory: the database loses every commit since. */
  restoreData(): Promise<void>;
  /** Stops the cluster and removes its directory. */
  destroy(): Promise<void>;
}

const live = new Set<() => void>();
process.on('exit', () => {
  for (const destroy of live) destroy();
});

function copyTree(from: string, to: string): Promise<void> {
  rmSync(to, { recursive: true, force: true });
  return new Promise((resolve, reject) => {
    const child = spawn('cp', ['-a', from, to], { stdio: ['ignore', 'ignore', 'pipe'] });
    let output = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`cp -a ${from} ${to} exited ${code}: ${output}`));
    });
  });
}

export async function startCluster(bin: string): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-pg-'));
  const owner = postgresUser();
  if (owner !== undefined) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const port = await freePort();
  const run = (tool: string, args: string[]): Promise<void> =>
    new Promise((resolve, reject) => {
      const child = spawn(join(bin, tool), args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], ...owner });
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (s: string) => (output += s));
      child.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
      child.once('error', reject);
      child.once('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`${tool} ${args.join(' ')} exited ${code}:\n${output}`)),
      );
    });
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on -c synchronous_commit=on`;
  const stopNow = (): void => {
    spawnSync(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop'], { cwd: dir, stdio: 'ignore', ...owner });
    rmSync(dir, { recursive: true, force: true });
  };
  live.add(stopNow);
  try {
    await run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
    await run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-o', options, '-w', '-t', '60', 'start']);
  } catch (error) {
    live.delete(stopNow);
    stopNow();
    throw error;
  }
  const admin = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} });
  let databases = 0;
  return {
    port,
    async createDatabase() {
      const name = `petstore_${++databases}`;
      await admin.unsafe(`CREATE DATABASE ${name}`);
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    stop: () => run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']),
    start: () => run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-o', options, '-w', '-t', '60', 'start']),
    // cp -a keeps the owner and modes that PostgreSQL insists on.
    copyData: () => copyTree(data, `${data}.copy`),
    async restoreData() {
      rmSync(data, { recursive: true, force: true });
      await copyTree(`${data}.copy`, data);
    },
    async destroy() {
      live.delete(stopNow);
      await admin.end({ timeout: 1 });
      stopNow();
    },
  };
}

/**
 * The suite `name` on a throwaway cluster of its own, each test on a database of its own: `groups`
 * register their tests with the cluster to use. Without PostgreSQL (and without CI=true) it is skipped
 * with one line saying how to get it. A test file per few groups, so that node --test runs them side by side.
 */
export function withPostgres(name: string, groups: Array<(cluster: () => Cluster) => void>): void {
  const bin = postgresBin();
  describe(name, { skip: bin === undefined ? SKIP_REASON : false }, () => {
    let cluster: Cluster | undefined;
    before(async () => {
      cluster = await startCluster(bin as string);
    });
    after(() => cluster?.destroy());
    const context = (): Cluster => {
      if (cluster === undefined) throw new Error('the cluster did not start');
      return cluster;
    };
    for (const group of groups) group(context);
  });
}

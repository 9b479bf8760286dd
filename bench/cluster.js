/**
 * A throwaway PostgreSQL cluster for the benchmarks that need one (postgres, feed): Debian's
 * binaries, run as the postgres user when this runs as root, removed when the process exits.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, removeDir, tempDir } from './harness.js';

export function postgresBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^[0-9]+$/.test(v))
    .sort((a, b) => b - a);
  return versions.map((v) => join(root, v, 'bin')).find((bin) => existsSync(join(bin, 'initdb')));
}

function postgresUser() {
  if (process.getuid() !== 0) return {};
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** A throwaway cluster: { url(name), createDatabase(name), vacuum(name), destroy() }. */
export async function startCluster(bin) {
  const dir = tempDir('petstore-bench-pg-');
  const owner = postgresUser();
  if (owner.uid !== undefined) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const port = await freePort();
  const run = (tool, args) => {
    const result = spawnSync(join(bin, tool), args, { cwd: dir, encoding: 'utf8', ...owner });
    if (result.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
  };
  const destroy = () => {
    spawnSync(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop'], { cwd: dir, stdio: 'ignore', ...owner });
    removeDir(dir);
  };
  process.on('exit', destroy);
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  run('pg_ctl', [
    '-D',
    data,
    '-l',
    join(dir, 'log'),
    '-w',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100`,
    'start',
  ]);
  return {
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    createDatabase: (name) => run('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', name]),
    vacuum: (name) =>
      run('vacuumdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '--analyze', '--quiet', name]),
    destroy,
  };
}

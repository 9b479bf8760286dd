/**
 * Tools the tests take from Debian packages (postgresql, prometheus): found where they are installed;
 * missing, installed by the tests themselves when CI=true and we are root, since CI must run those
 * tests; elsewhere undefined, and the tests that need them are skipped with one line saying how.
 */
import { spawnSync } from 'node:child_process';

/** What `find` finds, installing `pkg` first on CI; `skipReason` says how to get it, for the errors. */
export function findOrInstall<T>(find: () => T | undefined, pkg: string, skipReason: string): T | undefined {
  const found = find();
  if (found !== undefined || process.env.CI !== 'true') return found;
  if (process.getuid?.() !== 0)
    throw new Error(`${skipReason} (CI is set, but not running as root, so it cannot be installed here)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-q'],
    ['install', '-y', '-q', pkg],
  ]) {
    const result = spawnSync('apt-get', args, { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed: ${result.stderr}`);
  }
  const installed = find();
  if (installed === undefined)
    throw new Error(`apt-get installed ${pkg}, but what the tests need of it is not where they look`);
  return installed;
}

/**
 * promtool and a Prometheus server for the tests: Debian's `prometheus` package, installed here when
 * it is missing, CI=true and we are root (as postgres-support.ts does for PostgreSQL); elsewhere the
 * tests that need it are skipped, saying so in one line.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const PROMETHEUS_SKIP_REASON = 'promtool not installed: apt-get install prometheus, or run .ci/run';

const PROMTOOL = '/usr/bin/promtool';
const PROMETHEUS = '/usr/bin/prometheus';

/** Where promtool and prometheus are, or undefined (then the tests are skipped); on CI as root the package is installed. */
export function prometheusBin(): { promtool: string; prometheus: string } | undefined {
  const found = (): { promtool: string; prometheus: string } | undefined => (existsSync(PROMTOOL) && existsSync(PROMETHEUS) ? { promtool: PROMTOOL, prometheus: PROMETHEUS } : undefined);
  if (found() !== undefined || process.env['CI'] !== 'true') return found();
  if (process.getuid?.() !== 0) throw new Error(`${PROMETHEUS_SKIP_REASON} (CI is set, but not running as root, so it cannot be installed here)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update', '-q'], ['install', '-y', '-q', 'prometheus']]) {
    const result = spawnSync('apt-get', args, { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed: ${result.stderr}`);
  }
  const installed = found();
  if (installed === undefined) throw new Error(`apt-get installed prometheus, but ${PROMTOOL} or ${PROMETHEUS} is missing`);
  return installed;
}

/** Runs promtool with `args` and `input` on stdin: its exit code and what it printed. */
export function promtool(bin: string, args: string[], input = ''): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (output += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
    child.stdin.end(input);
  });
}

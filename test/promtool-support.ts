/**
 * promtool and a Prometheus server for the tests: Debian's `prometheus` package (debian-package.ts:
 * installed on CI, elsewhere the tests that need it are skipped, saying so in one line).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { findOrInstall } from './debian-package.js';

export const PROMETHEUS_SKIP_REASON = 'promtool not installed: apt-get install prometheus, or run .ci/run';

const PROMTOOL = '/usr/bin/promtool';
const PROMETHEUS = '/usr/bin/prometheus';

/** Where promtool and prometheus are, or undefined (then the tests are skipped); on CI as root the package is installed. */
export function prometheusBin(): { promtool: string; prometheus: string } | undefined {
  const find = (): { promtool: string; prometheus: string } | undefined =>
    existsSync(PROMTOOL) && existsSync(PROMETHEUS) ? { promtool: PROMTOOL, prometheus: PROMETHEUS } : undefined;
  return findOrInstall(find, 'prometheus', PROMETHEUS_SKIP_REASON);
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

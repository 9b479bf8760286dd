/**
 * Headless Chromium for the browser tests (cors-browser, feed-browser, reference-page): where it is, and a page
 * opened in it with a profile of its own, killed after the test. Debian: apt-get install chromium.
 */
import { type ChildProcess, type StdioOptions, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { TestContext } from 'node:test';
import { tempDir } from './support.js';

export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));

/** For a test's `skip` option: false where Chromium is installed, or why the test cannot run. */
export const withoutChromium = CHROMIUM === undefined ? 'Chromium not installed: apt-get install chromium' : false;

/**
 * Starts Chromium with `args` and a temporary profile of its own; after `t` it is killed, and only once it
 * has exited is the profile removed: a removal racing a live browser that writes its cache there hung a
 * whole test file for minutes (a hook of its own ran first).
 */
export async function startChromium(t: TestContext, args: string[], stdio: StdioOptions): Promise<ChildProcess> {
  const profile = await tempDir('petstore-chromium-');
  const browser = spawn(
    CHROMIUM as string,
    ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', ...args].concat(
      `--user-data-dir=${profile}`,
    ),
    { stdio },
  );
  const exited = new Promise((resolve) => browser.once('exit', resolve));
  t.after(async () => {
    browser.kill('SIGKILL');
    await exited;
    await rm(profile, { recursive: true, force: true });
  });
  return browser;
}

/** Opens `url` in headless Chromium, in a temporary profile; the browser is killed after `t`. */
export async function openInChromium(t: TestContext, url: string): Promise<void> {
  await startChromium(t, [url], 'ignore');
}

/**
 * Headless Chromium for the browser tests (cors-browser, feed-browser, reference-page): where it is, and a page
 * opened in it with a profile of its own, killed after the test. Debian: apt-get install chromium.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { tempDirFor } from './support.js';

export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));

/** For a test's `skip` option: false where Chromium is installed, or why the test cannot run. */
export const withoutChromium = CHROMIUM === undefined ? 'Chromium not installed: apt-get install chromium' : false;

/** Opens `url` in headless Chromium, in a temporary profile; the browser is killed after `t`. */
export async function openInChromium(t: TestContext, url: string): Promise<void> {
  const profile = await tempDirFor(t, 'petstore-chromium-');
  const browser = spawn(
    CHROMIUM as string,
    [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      `--user-data-dir=${profile}`,
      url,
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise((resolve) => browser.once('exit', resolve));
  t.after(async () => {
    browser.kill('SIGKILL');
    await exited;
  });
}

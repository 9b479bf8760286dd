/**
 * npm's `prepare` step: a script file that says what it does, which builds dist/ when TypeScript is
 * there, keeps a dist/ already built when it is not, and otherwise fails saying how to install.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { tempDirFor } from './support.js';

const ROOT = resolve(__dirname, '../..');

test('the prepare step is a script file that opens by saying what it does', async () => {
  const scripts = (
    JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts;
  assert.equal(scripts.prepare, 'node scripts/prepare.js');
  const text = await readFile(join(ROOT, 'scripts', 'prepare.js'), 'utf8');
  assert.match(text, /^\/\*\*\n \* npm's `prepare` step/);
});

test('without TypeScript, prepare keeps a dist/ already built, and without one fails naming the production install', async (t) => {
  // A package tree with no node_modules: what `npm install --omit=dev` leaves in a fresh clone.
  const dir = await tempDirFor(t, 'petstore-prepare-');
  await mkdir(join(dir, 'scripts'));
  await copyFile(join(ROOT, 'package.json'), join(dir, 'package.json'));
  await copyFile(join(ROOT, 'scripts', 'prepare.js'), join(dir, 'scripts', 'prepare.js'));
  const prepare = (): { status: number | null; stderr: string } =>
    spawnSync('npm', ['run', '--silent', 'prepare'], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH } });

  const unbuilt = prepare();
  assert.equal(unbuilt.status, 1, unbuilt.stderr);
  assert.match(
    unbuilt.stderr,
    /TypeScript is not installed, so dist\/ cannot be built\. For a production install run: npm ci && npm prune --omit=dev$/m,
  );

  await mkdir(join(dir, 'dist'));
  await writeFile(join(dir, 'dist', 'server.js'), '');
  const built = prepare();
  assert.equal(built.status, 0, built.stderr);
  assert.match(built.stderr, /TypeScript is not installed; keeping the dist\/ already built/);
});

/**
 * The settings table (src/service/settings.ts) against what is written about it: the configuration tables of
 * docs/operations.md and docs/postgresql.md, the options table of docs/embedding.md, and its own bounds.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { resolveConfig } from '#dist/cli/config.js';
import { SETTINGS } from '#dist/service/settings.js';

const DOCS = join(__dirname, '../../docs');

/** The rows of every markdown table in `file`, each as its cells with their backticks removed. */
function tableRows(file: string): string[][] {
  return readFileSync(join(DOCS, file), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| ---'))
    .map((line) =>
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim().replace(/`/g, '')),
    );
}

/** A default as the docs write it: `unset…` for none, `on`/`off` and `off (false)` for a boolean. */
function writtenDefault(cell: string): string | number | boolean | undefined {
  if (cell.startsWith('unset')) return undefined;
  if (cell === 'on' || cell === 'true') return true;
  if (cell === 'off' || cell === 'off (false)' || cell === 'false') return false;
  return /^[0-9]+(\.[0-9]+)?$/.test(cell) ? Number(cell) : cell;
}

test('every flag in the configuration tables of the docs is a setting with its variable and default', () => {
  const rows = [...tableRows('operations.md'), ...tableRows('postgresql.md')].filter((row) => row[0]?.startsWith('--'));
  const documented = new Set<string>();
  for (const [flag, env, fallback] of rows) {
    const s = SETTINGS.find((candidate) => `--${candidate.flag}` === flag);
    assert.ok(s !== undefined, `${flag} in the docs is a setting`);
    documented.add(s.flag);
    assert.equal(env, s.env, `${flag}'s variable`);
    assert.equal(writtenDefault(fallback as string), s.default, `${flag}'s default`);
  }
  const missing = SETTINGS.filter((s) => !documented.has(s.flag)).map((s) => `--${s.flag}`);
  assert.deepEqual(missing, [], 'every setting has a row in operations.md or postgresql.md');
});

test("an option in embedding.md's table that is a setting shows the setting's default", () => {
  let compared = 0;
  for (const [names, fallback] of tableRows('embedding.md')) {
    for (const name of (names as string).split(', ')) {
      const s = SETTINGS.find((candidate) => candidate.key === name);
      // dataDir has a default on the command line only: an embedder gives it, or a store.
      if (s === undefined || s.default === undefined || s.key === 'dataDir') continue;
      assert.equal(writtenDefault(fallback as string), s.default, `${name}'s default`);
      compared++;
    }
  }
  assert.ok(compared >= 10, `compared ${compared} defaults`);
});

test('every default is a value its own flag accepts', () => {
  const env: Record<string, string> = {};
  for (const s of SETTINGS) {
    if (s.default === undefined) continue;
    env[s.env] = s.type === 'on-off' ? (s.default ? 'on' : 'off') : String(s.default);
  }
  assert.deepEqual(resolveConfig({}, env), resolveConfig({}, {}));
});

/**
 * docs/embedding.md, "What it exports", names everything the package exports, values and types,
 * as its declarations (dist/index.d.ts) list them, and nothing it does not export.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(__dirname, '../..');

/** The names `export { … }` and `export type { … }` statements list, `type` markers dropped. */
function exportedNames(declarations: string): string[] {
  return [...declarations.matchAll(/^export (?:type )?\{([^}]*)\}/gm)]
    .flatMap((m) => (m[1] as string).split(','))
    .map((name) => name.trim().replace(/^type\s+/, ''))
    .filter((name) => name !== '');
}

test('embedding.md lists every export of the package, types included, and only those', () => {
  const exported = exportedNames(readFileSync(join(ROOT, 'dist', 'index.d.ts'), 'utf8'));
  assert.ok(
    exported.includes('createPetstore') && exported.includes('PetStore'),
    `read the exports: ${exported.join(', ')}`,
  );
  const guide = readFileSync(join(ROOT, 'docs', 'embedding.md'), 'utf8');
  const section = /^## What it exports\n([\s\S]*?)^## /m.exec(guide)?.[1] ?? '';
  // The first cell of each row: `name(…)` or a list of `Name`s.
  const listed = [...section.matchAll(/^\| ([^|]+) \|/gm)].flatMap((row) =>
    [...(row[1] as string).matchAll(/`([A-Za-z_]\w*)/g)].map((m) => m[1] as string),
  );
  const types = /^\| types \| (.*) \|$/m.exec(section)?.[1] ?? '';
  const names = new Set([...listed, ...[...types.matchAll(/`(\w+)`/g)].map((m) => m[1] as string)]);
  assert.deepEqual(
    exported.filter((name) => !names.has(name)),
    [],
    'exported but not listed',
  );
  assert.deepEqual(
    [...names].filter((name) => !exported.includes(name)),
    [],
    'listed but not exported',
  );
});

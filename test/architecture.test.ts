import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

/**
 * The layout is the architecture: layers are folders of `src/`, and imports point one way only,
 * from a layer to the ones after it in LAYERS (README, "Layout"). Type-only imports count too.
 */
const SRC = resolve(__dirname, '../../src');
const LAYERS = [['cli'], ['service'], ['http', 'webhooks'], ['auth', 'store'], ['pet'], ['lib']] as const;
const ENTRY_FILES = ['index.ts', 'server.ts'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [relative(SRC, path)] : [];
  });
}

/** Every relative module a file imports or re-exports, as a path under src/ ending in .ts. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  const specifiers = [
    ...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'";]*?from\s+'(\.[^']+)'|import\('(\.[^']+)'\)/g),
  ];
  return specifiers.map((m) =>
    relative(SRC, resolve(dirname(join(SRC, file)), (m[1] ?? m[2]) as string)).replace(/\.js$/, '.ts'),
  );
}

function rank(file: string): number {
  const folder = file.split('/')[0] as string;
  return LAYERS.findIndex((layer) => (layer as readonly string[]).includes(folder));
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((file) => [file, importsOf(file)]));

test('src holds only the two entry files and one folder per layer', () => {
  const top = readdirSync(SRC, { withFileTypes: true });
  assert.deepEqual(
    top
      .filter((e) => e.isFile())
      .map((e) => e.name)
      .sort(),
    ENTRY_FILES,
  );
  assert.deepEqual(
    top
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort(),
    LAYERS.flat().slice().sort(),
  );
});

test('the import scanner sees plain, type-only and re-exporting imports', () => {
  // A scanner that found nothing would let every rule below pass.
  assert.ok((graph.get('http/app.ts') ?? []).includes('http/router.ts'));
  assert.ok((graph.get('http/openapi.ts') ?? []).includes('http/route-spec.ts'), 'type-only import');
  assert.ok((graph.get('index.ts') ?? []).includes('service/create-petstore.ts'), 're-export');
});

test('every import points to a file that exists', () => {
  for (const [file, imports] of graph) {
    for (const target of imports) assert.ok(graph.has(target), `${file} imports ${target}, which is not a source file`);
  }
});

test('imports point one way: from a layer only to the layers after it, or within its own folder', () => {
  for (const [file, imports] of graph) {
    if (ENTRY_FILES.includes(file)) continue;
    for (const target of imports) {
      const sameFolder = file.split('/')[0] === target.split('/')[0];
      assert.ok(
        sameFolder || rank(target) > rank(file),
        `${file} (layer ${rank(file)}) imports ${target} (layer ${rank(target)})`,
      );
    }
  }
});

test('interchangeable parts of a layer (store/file, store/postgres) never import each other', () => {
  // Only the store's folders are interchangeable parts; http's folders are steps of one pipeline.
  const part = (file: string): string | undefined => {
    const segments = file.split('/');
    return segments[0] === 'store' && segments.length > 2 ? segments.slice(0, 2).join('/') : undefined;
  };
  assert.ok(
    files.some((f) => part(f) === 'store/file') && files.some((f) => part(f) === 'store/postgres'),
    'both stores are found',
  );
  for (const [file, imports] of graph) {
    const mine = part(file);
    if (mine === undefined) continue;
    for (const target of imports) {
      const theirs = part(target);
      assert.ok(
        theirs === undefined || theirs === mine || theirs.split('/')[0] !== mine.split('/')[0],
        `${file} imports ${target}`,
      );
    }
  }
});

test('there is no import cycle, type-only imports included', () => {
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]): void => {
    if (state.get(file) === 'done') return;
    assert.notEqual(state.get(file), 'open', `import cycle: ${[...path, file].join(' → ')}`);
    state.set(file, 'open');
    for (const target of graph.get(file) ?? []) visit(target, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of files) visit(file, []);
});

test('no line of src/ is wider than 120 columns (Biome formats to that width; strings and comments are wrapped by hand)', () => {
  for (const file of files) {
    const lines = readFileSync(join(SRC, file), 'utf8').split('\n');
    lines.forEach((line, i) => assert.ok(line.length <= 120, `${file}:${i + 1} is ${line.length} columns wide`));
  }
});

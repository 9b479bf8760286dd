/**
 * A client generated from the served OpenAPI document, as docs/api.md shows it: openapi-typescript
 * on /v1/openapi.json, openapi-fetch with the media-type parameter that picks JSON, compiled with
 * this project's TypeScript and run against a server. Without the parameter the obvious client does
 * not compile (listPets' 200 is the JSON list or the event stream), which is why api.md gives it.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { TEST_KEY, startServer, tempDirFor } from './support.js';

const ROOT = resolve(__dirname, '../..');
const PICKS_JSON = `createClient<paths, 'application/json'>(`;

const client = (create: string): string => `import createClient from 'openapi-fetch';
import type { paths } from './petstore';

async function main(): Promise<void> {
  const [baseUrl = '', key = ''] = process.argv.slice(2);
  const client = ${create}{ baseUrl, headers: { Authorization: \`Bearer \${key}\` } });
  await client.POST('/pets', { body: { name: 'Rex', categoryId: 7 } });
  const { data } = await client.GET('/pets');
  console.log(JSON.stringify(data?.map((p) => p.id)));
}
void main();
`;

/** Runs `node args` in `cwd`, bounded: its status and what it printed. */
function run(cwd: string, args: string[]): { status: number | null; out: string } {
  const result = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, out: `${result.stdout}${result.stderr}` };
}

test('a client generated from the served document, written as api.md shows, compiles and lists the pets; without its media type it does not compile', {
  timeout: 120_000,
}, async (t) => {
  assert.ok(
    readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8').includes(PICKS_JSON),
    'api.md shows the line that picks JSON',
  );
  const server = await startServer({ keys: [TEST_KEY] });
  t.after(() => server.close());
  const dir = await tempDirFor(t, 'petstore-client-');
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'openapi.json'), (await server.request('GET', '/v1/openapi.json', { auth: false })).text);
  const generated = run(dir, [
    join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'),
    'openapi.json',
    '-o',
    'petstore.d.ts',
  ]);
  assert.equal(generated.status, 0, generated.out);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        types: ['node'],
        outDir: 'out',
        skipLibCheck: true,
      },
      files: ['client.ts', 'petstore.d.ts'],
    }),
  );
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

  writeFileSync(join(dir, 'client.ts'), client('createClient<paths>('));
  const obvious = run(dir, [tsc, '-p', 'tsconfig.json', '--noEmit']);
  assert.notEqual(obvious.status, 0, "the client without a media type compiles: api.md's line may no longer be needed");
  assert.match(obvious.out, /error TS2339: Property 'map' does not exist on type/);

  writeFileSync(join(dir, 'client.ts'), client(PICKS_JSON));
  const compiled = run(dir, [tsc, '-p', 'tsconfig.json']);
  assert.equal(compiled.status, 0, compiled.out);
  // Not spawnSync: the server answering it runs in this process.
  const ran = await new Promise<{ stdout: string; stderr: string }>((done, fail) => {
    execFile(
      process.execPath,
      [join(dir, 'out', 'client.js'), `${server.url}/v1`, TEST_KEY],
      { encoding: 'utf8', timeout: 30_000 },
      (error, stdout, stderr) => (error === null ? done({ stdout, stderr }) : fail(error)),
    );
  });
  assert.equal(ran.stderr, '');
  assert.equal(ran.stdout, '[1]\n', 'the pet it created, by its id');
});

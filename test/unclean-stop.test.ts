/**
 * The start says what happened: after an unclean stop (kill -9, a crash, power loss) one line says
 * so, where ids go on and why; after a clean stop, nothing of the kind.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { TEST_KEY, request, spawnServerFor, stopProcess } from './support.js';
import { dataDir } from './store-support.js';

const create = async (url: string, name: string): Promise<number> => {
  const created = await request(url, 'POST', '/v1/pets', {
    headers: [
      ['content-type', 'application/json'],
      ['x-api-key', TEST_KEY],
    ],
    body: JSON.stringify({ name, categoryId: 1 }),
  });
  assert.equal(created.status, 201, created.text);
  return (JSON.parse(created.text) as { id: number }).id;
};

test('after kill -9 the start logs one line: unclean stop, where ids continue and why; the next pet gets that id', async (t) => {
  const dir = join(await dataDir(t), 'data');
  const env = { PETSTORE_API_KEYS: TEST_KEY };
  const first = await spawnServerFor(t, ['--data-dir', dir], env);
  for (const name of ['a', 'b', 'c']) await create(first.url, name);
  await stopProcess(first, 'SIGKILL');

  const second = await spawnServerFor(t, ['--data-dir', dir], env);
  const lines = second
    .stdout()
    .split('\n')
    .filter((line) => /unclean stop/.test(line));
  assert.equal(lines.length, 1, second.stdout());
  const said = /records end at pet 3; new ids continue from ([0-9]+), past every id reserved before the stop/.exec(
    lines[0] as string,
  );
  assert.ok(said !== null, lines[0]);
  assert.equal(await create(second.url, 'd'), Number(said[1]));
  assert.equal(await stopProcess(second), 0);

  const third = await spawnServerFor(t, ['--data-dir', dir], env);
  assert.doesNotMatch(third.stdout() + third.stderr(), /unclean stop/);
});

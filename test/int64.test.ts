/**
 * int64 categoryIds keep every digit through the whole path: request, response, journal replay
 * after kill -9, and snapshot after a graceful stop.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request, spawnServerFor, tempDirFor, TEST_KEY } from './support.js';

const EXTREMES = ['9223372036854775807', '-9223372036854775808', '9007199254740993', '-1'];

test('int64 extremes come back as the same digits after kill -9 (journal) and after a graceful stop (snapshot)', {
  timeout: 120_000,
}, async (t) => {
  const dir = await tempDirFor(t, 'petstore-int64-');
  const env = { PETSTORE_API_KEYS: TEST_KEY };
  const expected: string[] = [];
  const first = await spawnServerFor(t, ['--data-dir', dir], env);
  for (const [i, digits] of EXTREMES.entries()) {
    const body = `{"name":"big ${i}","categoryId":${digits}}`;
    const res = await request(first.url, 'POST', '/v1/pets', { headers: [['content-type', 'application/json']], body });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.text, `{"id":${i + 1},"name":"big ${i}","categoryId":${digits}}`);
    expected.push(res.text);
  }
  first.child.kill('SIGKILL');
  await first.exited;

  const replayed = await spawnServerFor(t, ['--data-dir', dir], env);
  assert.equal((await request(replayed.url, 'GET', '/v1/pets')).text, `[${expected.join(',')}]`);
  replayed.child.kill('SIGTERM');
  assert.equal(await replayed.exited, 0);

  const fromSnapshot = await spawnServerFor(t, ['--data-dir', dir], env);
  assert.equal((await request(fromSnapshot.url, 'GET', '/v1/pets')).text, `[${expected.join(',')}]`);
  for (const [i, text] of expected.entries())
    assert.equal((await request(fromSnapshot.url, 'GET', `/v1/pets/${i + 1}`)).text, text);
});

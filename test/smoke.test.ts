import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startServer } from './helpers.js';

test('a created pet is listed and fetched back', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const created = await server.request('POST', '/v1/pets', { headers: [['content-type', 'application/json']], body: '{"name":"Rex","categoryId":7}' });
  assert.equal(created.status, 201);
  assert.deepEqual(created.json, { id: 1, name: 'Rex', categoryId: 7 });
  const list = await server.request('GET', '/v1/pets');
  assert.deepEqual(list.json, [{ id: 1, name: 'Rex', categoryId: 7 }]);
});

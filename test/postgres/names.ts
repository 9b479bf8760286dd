/**
 * What postgresql.md says of names: `\u0000` comes back exactly (kept as JSON text, which a
 * PostgreSQL text value could not hold raw), and a lone surrogate is refused by both stores alike.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startServer } from '../support.js';
import type { Cluster } from '../postgres-support.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

export function nameTests(cluster: () => Cluster): void {
  test('a name keeps \\u0000 exactly, and a lone surrogate is a 400 from both stores, as postgresql.md says', async (t) => {
    const files = await startServer();
    t.after(() => files.close());
    const database = await startServer({ databaseUrl: await cluster().createDatabase() });
    t.after(() => database.close());
    for (const server of [files, database]) {
      const kept = await server.request('POST', '/v1/pets', {
        headers: JSON_HEADERS,
        body: '{"name":"nul \\u0000 here","categoryId":1}',
      });
      assert.equal(kept.status, 201, kept.text);
      assert.equal(
        (await server.request('GET', '/v1/pets/1')).text,
        '{"id":1,"name":"nul \\u0000 here","categoryId":1}',
      );
      for (const name of ['\\ud800', 'a\\udc00b', '\\ud83d\\u0041']) {
        const refused = await server.request('POST', '/v1/pets', {
          headers: JSON_HEADERS,
          body: `{"name":"${name}","categoryId":1}`,
        });
        assert.equal(refused.status, 400, `${name}: ${refused.text}`);
        assert.match(refused.text, /lone surrogate/);
      }
    }
  });
}

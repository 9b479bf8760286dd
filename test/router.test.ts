/** Unit tests of the router: data behind `add` and `find`, where `find` always returns a Match. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { METHODS, Router } from '#dist/http/router.js';

function petRouter(): Router<string> {
  return new Router<string>()
    .add('GET', '/v1/pets', 'listPets')
    .add('POST', '/v1/pets', 'createPet')
    .add('GET', '/v1/pets/:petId', 'getPet')
    .add('GET', '/v1/openapi.json', 'openapi');
}

test('METHODS is the closed set of routed methods', () => {
  assert.deepEqual([...METHODS], ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);
});

test('a static path and method find their value, with no params', () => {
  assert.deepEqual(petRouter().find('GET', '/v1/pets'), {
    path: '/v1/pets',
    value: 'listPets',
    allowed: ['GET', 'HEAD', 'POST'],
    params: {},
  });
  assert.deepEqual(petRouter().find('POST', '/v1/pets'), {
    path: '/v1/pets',
    value: 'createPet',
    allowed: ['GET', 'HEAD', 'POST'],
    params: {},
  });
});

test('a path parameter is captured by name', () => {
  assert.deepEqual(petRouter().find('GET', '/v1/pets/42'), {
    path: '/v1/pets/:petId',
    value: 'getPet',
    allowed: ['GET', 'HEAD'],
    params: { petId: '42' },
  });
});

test('a path parameter is left percent-encoded', () => {
  assert.deepEqual(petRouter().find('GET', '/v1/pets/%ZZ').params, { petId: '%ZZ' });
  assert.deepEqual(petRouter().find('GET', '/v1/pets/a%2Fb').params, { petId: 'a%2Fb' });
});

test('a known path with another method has the path and allowed methods but no value', () => {
  assert.deepEqual(petRouter().find('DELETE', '/v1/pets'), {
    path: '/v1/pets',
    value: undefined,
    allowed: ['GET', 'HEAD', 'POST'],
    params: {},
  });
  const dynamic = petRouter().find('PUT', '/v1/pets/7');
  assert.equal(dynamic.path, '/v1/pets/:petId');
  assert.equal(dynamic.value, undefined);
  assert.deepEqual(dynamic.allowed, ['GET', 'HEAD']);
});

test('a method name is matched exactly, not case-insensitively', () => {
  const match = petRouter().find('get', '/v1/pets');
  assert.equal(match.path, '/v1/pets');
  assert.equal(match.value, undefined);
});

test('an unknown path gives an empty match', () => {
  for (const path of [
    '/',
    '',
    '/v1',
    '/v2/pets',
    '/v1/pets/1/extra',
    '/v1/pets/1/',
    '/v1/Pets',
    '/v1/pets/',
    '//v1/pets',
    '//v1/pets/1',
    '/v1/pet/1',
    '/v1/petss/1',
    '/v1pets/1',
    'v1/pets/1',
    '/v1/pets//1',
    '/v1//pets/1',
    '/v1/pets/1//',
  ]) {
    assert.deepEqual(
      petRouter().find('GET', path),
      { path: undefined, value: undefined, allowed: [], params: {} },
      path,
    );
  }
});

test('an empty segment does not match a parameter', () => {
  assert.equal(petRouter().find('GET', '/v1/pets/').path, undefined);
});

test('a static route wins over a parameter route for the same path', () => {
  const router = new Router<string>().add('GET', '/v1/pets/:petId', 'byId').add('GET', '/v1/pets/search', 'search');
  assert.deepEqual(router.find('GET', '/v1/pets/search'), {
    path: '/v1/pets/search',
    value: 'search',
    allowed: ['GET', 'HEAD'],
    params: {},
  });
  assert.equal(router.find('GET', '/v1/pets/3').value, 'byId');
});

test('several parameters in one pattern are all captured', () => {
  const router = new Router<string>().add('GET', '/a/:x/b/:y', 'xy');
  assert.deepEqual(router.find('GET', '/a/1/b/2'), {
    path: '/a/:x/b/:y',
    value: 'xy',
    allowed: ['GET', 'HEAD'],
    params: { x: '1', y: '2' },
  });
  assert.equal(router.find('GET', '/a/1/c/2').path, undefined);
  assert.equal(router.find('GET', '/a/1/b').path, undefined);
});

test('methods added to one pattern share it and are allowed in the order added', () => {
  const router = new Router<number>().add('DELETE', '/x/:id', 1).add('GET', '/x/:id', 2).add('PATCH', '/x/:id', 3);
  const match = router.find('GET', '/x/9');
  assert.equal(match.value, 2);
  assert.deepEqual(match.allowed, ['DELETE', 'GET', 'HEAD', 'PATCH']);
});

test('the first dynamic pattern added wins when two could match', () => {
  const router = new Router<string>().add('GET', '/p/:a', 'first').add('GET', '/p/:b', 'second');
  assert.deepEqual(router.find('GET', '/p/1'), {
    path: '/p/:a',
    value: 'first',
    allowed: ['GET', 'HEAD'],
    params: { a: '1' },
  });
});

test('a router with no routes finds nothing', () => {
  assert.deepEqual(new Router<string>().find('GET', '/v1/pets'), {
    path: undefined,
    value: undefined,
    allowed: [],
    params: {},
  });
});

test('GET also answers HEAD with the same value, and an explicit HEAD route wins', () => {
  const router = new Router<string>().add('GET', '/a', 'get');
  assert.equal(router.find('HEAD', '/a').value, 'get');
  router.add('HEAD', '/a', 'head');
  assert.equal(router.find('HEAD', '/a').value, 'head');
  assert.deepEqual(router.find('HEAD', '/a').allowed, ['GET', 'HEAD']);
});

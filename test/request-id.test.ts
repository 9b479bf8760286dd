import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newRequestId } from '#dist/http/pipeline/request-id.js';

// RFC 9562 §5.4: version nibble 4, variant bits 10 (8, 9, a or b), lower-case hex.
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('request ids are distinct version 4 UUIDs, also across the batches they are made in', () => {
  const ids = Array.from({ length: 1000 }, newRequestId); // several batches of 128
  for (const id of ids) assert.match(id, UUID_V4);
  assert.equal(new Set(ids).size, ids.length);
});

test('request ids carry random bits in every hex position', () => {
  // A slip in the layout (a position never written, an offset off by one) leaves a position constant.
  const ids = Array.from({ length: 1000 }, newRequestId);
  for (let at = 0; at < 36; at++) {
    if ([8, 13, 14, 18, 23].includes(at)) continue; // the dashes and the version nibble
    const seen = new Set(ids.map((id) => id[at]));
    assert.ok(seen.size >= (at === 19 ? 4 : 12), `position ${at} takes ${seen.size} values`);
  }
});

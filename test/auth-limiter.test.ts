import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AuthLimiter, clientKey } from '#dist/auth/limiter.js';

test('an address is blocked after the limit until its window ends, then starts afresh', () => {
  const limiter = new AuthLimiter(3, 60_000);
  for (let i = 0; i < 3; i++) {
    assert.equal(limiter.blockedFor('a', 1000), 0);
    limiter.recordFailure('a', 1000 + i);
  }
  assert.equal(limiter.blockedFor('a', 2000), 59);
  assert.equal(limiter.blockedFor('b', 2000), 0, 'another address is unaffected');
  assert.equal(limiter.blockedFor('a', 61_000), 0, 'the window is over');
  limiter.recordFailure('a', 61_000);
  assert.equal(limiter.blockedFor('a', 61_001), 0, 'one new failure does not block again');
});

test('Retry-After rounds up: a block with half a second left says 1, never 0', () => {
  const limiter = new AuthLimiter(1, 60_000);
  limiter.recordFailure('a', 0);
  assert.equal(limiter.blockedFor('a', 59_500), 1);
  assert.equal(limiter.blockedFor('a', 59_999), 1);
  assert.equal(limiter.blockedFor('a', 1), 60);
});

test('a full table forgets unblocked addresses before blocked ones', () => {
  const limiter = new AuthLimiter(2, 60_000, 3);
  limiter.recordFailure('blocked', 0);
  limiter.recordFailure('blocked', 0);
  limiter.recordFailure('x', 1);
  limiter.recordFailure('y', 2);
  limiter.recordFailure('z', 3); // the table is full: x goes, not the blocked address
  assert.ok(limiter.blockedFor('blocked', 10) > 0);
});

test('IPv6 clients are counted by /64, IPv4 and IPv4-mapped ones by address', () => {
  assert.equal(clientKey('192.0.2.7'), '192.0.2.7');
  assert.equal(clientKey('::ffff:192.0.2.7'), '192.0.2.7');
  assert.equal(clientKey('2001:db8::1'), clientKey('2001:db8:0:0:ffff::2'));
  assert.equal(clientKey('2001:0db8:aaaa:bbbb:cccc:dddd:eeee:ffff'), '2001:db8:aaaa:bbbb::/64');
  assert.notEqual(clientKey('2001:db8:0:1::1'), clientKey('2001:db8:0:2::1'));
  assert.equal(clientKey('fe80::1%eth0'), clientKey('fe80::2'));
});

test('Retry-After of a block just begun is the window, at the large fractional monotonic times of a machine up for hours', () => {
  const limiter = new AuthLimiter(1, 60_000);
  // Just under 2^24 ms (4.66 hours): adding the minute crosses a power of two, and a quarter of these are off.
  for (let i = 0; i < 200; i++) {
    const now = 16_745_000.123 + i * 0.0137;
    limiter.recordFailure(`a${i}`, now);
    assert.equal(limiter.blockedFor(`a${i}`, now), 60, `at ${now}`);
  }
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedHash } from '#dist/lib/keyed-hash.js';

/** Bytes 0, 1, … n - 1 as UTF-16LE text: the reference vectors' messages of even length. */
function counting(bytes: number): string {
  let text = '';
  for (let i = 0; i < bytes; i += 2) text += String.fromCharCode(i | ((i + 1) << 8));
  return text;
}

test('the keyed hash is HalfSipHash-1-3: the reference vectors (key 00 01 … 07, messages 00 01 … n-1)', () => {
  // From the SipHash reference's vectors, as Linux's lib/siphash_kunit.c holds them for hsiphash on 32-bit machines.
  const vectors = new Map([
    [0, 0x5814c896],
    [2, 0xbc4b0e30],
    [4, 0x7e059ea6],
    [6, 0xa0080b65],
    [8, 0x577999b1],
    [16, 0x8b31d501],
    [30, 0x2331b6a3],
    [32, 0xbc6dda8d],
    [62, 0x74c1ebf8],
  ]);
  const hash = new KeyedHash(new Uint32Array([0x03020100, 0x07060504]));
  for (const [bytes, expected] of vectors) assert.equal(hash.hash(counting(bytes)) >>> 0, expected, `${bytes} bytes`);
});

test('an odd number of code units, and code units above 255, are hashed whole', () => {
  const hash = new KeyedHash(new Uint32Array([1, 2]));
  const values = new Set(
    ['', 'a', 'a\0', 'ab', 'b', '\u0161', 'a\u0100', 'a\u0000\u0001'].map((text) => hash.hash(text)),
  );
  assert.equal(values.size, 8);
});

test('two hashes without a given key have secrets of their own', () => {
  const texts = Array.from({ length: 8 }, (_, i) => `s\nkey-${i}`);
  const a = texts.map((text) => new KeyedHash().hash(text));
  const b = texts.map((text) => new KeyedHash().hash(text));
  assert.notDeepEqual(a, b);
});

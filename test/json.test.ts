/** Unit tests of the strict JSON parser: exact integers, strict strings, no prototype tricks. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JsonSyntaxError, parseJson, type JsonValue } from '#dist/lib/json.js';

/** Asserts that parsing fails with a JsonSyntaxError (at `position`, when given). */
function rejects(text: string, position?: number): void {
  assert.throws(
    () => parseJson(text),
    (error: unknown) => {
      assert.ok(error instanceof JsonSyntaxError, `${JSON.stringify(text)}: ${String(error)}`);
      assert.ok(error instanceof SyntaxError);
      assert.equal(error.name, 'JsonSyntaxError');
      if (position !== undefined) {
        assert.equal(error.position, position, JSON.stringify(text));
        assert.match(error.message, new RegExp(`at position ${position}$`));
      }
      return true;
    },
    JSON.stringify(text),
  );
}

/** A deep copy with ordinary prototypes, so that deepEqual compares contents only. */
function plain(value: JsonValue): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

test('literals parse to their values', () => {
  assert.equal(parseJson('true'), true);
  assert.equal(parseJson('false'), false);
  assert.equal(parseJson('null'), null);
});

test('misspelt literals are refused', () => {
  for (const text of ['tru', 'True', 'nul', 'NULL', 'fals', 'undefined', 'NaN', 'Infinity', '-Infinity']) rejects(text);
});

test('integers become exact bigints', () => {
  assert.equal(parseJson('0'), 0n);
  assert.equal(parseJson('7'), 7n);
  assert.equal(parseJson('-12'), -12n);
  assert.equal(parseJson('9007199254740993'), 9007199254740993n);
  assert.equal(parseJson('9223372036854775807'), 9223372036854775807n);
  assert.equal(parseJson('-9223372036854775808'), -9223372036854775808n);
  assert.equal(parseJson('123456789012345678901234567890'), 123456789012345678901234567890n);
});

test('-0 becomes the number -0', () => {
  const value = parseJson('-0');
  assert.equal(typeof value, 'number');
  assert.ok(Object.is(value, -0));
});

test('a fraction or an exponent makes a number', () => {
  assert.equal(parseJson('1.5'), 1.5);
  assert.equal(parseJson('1e2'), 100);
  assert.equal(parseJson('1E+2'), 100);
  assert.equal(parseJson('-2.5e-1'), -0.25);
  assert.equal(typeof parseJson('1.0'), 'number');
  assert.equal(typeof parseJson('1e2'), 'number');
  assert.ok(Object.is(parseJson('-0.0'), -0));
});

test('a number that overflows is refused rather than Infinity', () => {
  rejects('1e400', 0);
  rejects('-1e400', 0);
  rejects('[1, 1.8e308]', 4);
});

test('malformed numbers are refused', () => {
  for (const text of ['01', '-01', '00', '+1', '.5', '1.', '-', '1e', '1e+', '1.e3', '0x10', '1_000', '- 1', '--1'])
    rejects(text);
});

test('a number literal over 64 characters is refused', () => {
  assert.equal(parseJson('1'.repeat(64)), BigInt('1'.repeat(64)));
  rejects('1'.repeat(65), 0);
  rejects(`[${'1'.repeat(65)}]`, 1);
});

test('strings parse with every escape', () => {
  assert.equal(parseJson('"plain"'), 'plain');
  assert.equal(parseJson('""'), '');
  assert.equal(parseJson('"\\" \\\\ \\/ \\b \\f \\n \\r \\t"'), '" \\ / \b \f \n \r \t');
  assert.equal(parseJson('"\\u00e9\\u00E9\\u0000"'), '\u00e9\u00e9\u0000');
  assert.equal(parseJson('"a\\nb\u00e9c"'), 'a\nb\u00e9c');
});

test('invalid escapes are refused', () => {
  rejects('"\\x41"', 1);
  rejects('"\\u12"');
  rejects('"\\uZZZZ"');
  rejects('"\\U0041"', 1);
  rejects('"\\\'"', 1);
  rejects('"\\"');
});

test('valid surrogate pairs are accepted, escaped and raw', () => {
  const dog = '\u{1F436}';
  assert.equal(parseJson('"\\ud83d\\udc36"'), dog);
  assert.equal(parseJson('"\\uD83D\\uDC36"'), dog);
  assert.equal(parseJson(`"${dog}"`), dog);
  assert.equal(parseJson(`"\\n${dog}x"`), `\n${dog}x`);
  assert.equal(parseJson(`"a${dog}\\u0041${dog}"`), `a${dog}A${dog}`);
});

test('lone escaped surrogates are refused', () => {
  for (const text of [
    '"\\ud800"',
    '"\\udc00"',
    '"\\ud800x"',
    '"\\ud800\\u0041"',
    '"\\ud800\\ud800"',
    '"\\udc36\\ud83d"',
    '"x\\udfff"',
  ])
    rejects(text);
  rejects('"ab\\ud800"', 3);
});

test('lone raw surrogates are refused', () => {
  for (const text of ['"\ud800"', '"\udc00"', '"\ud800x"', '"\udc36\ud83d"', '"\\n\ud800"', '"\\n\udc00"'])
    rejects(text);
  rejects('"ab\ud800"', 3);
});

test('raw control characters in strings are refused', () => {
  for (let c = 0; c < 0x20; c++) {
    rejects(`"a${String.fromCharCode(c)}b"`, 2);
    rejects(`"\\n${String.fromCharCode(c)}"`, 3);
  }
  assert.equal(parseJson('"\u007f"'), '\u007f');
});

test('unterminated strings are refused', () => {
  for (const text of ['"', '"abc', '"abc\\"', '"\\n', '["a]', '{"a']) rejects(text);
});

test('a text cut short is said to end before the JSON value does, at its end', () => {
  for (const text of ['', '{"name":"Rex",', '{"name":"Rex"', '{"name":', '{"na', '[1,', '[', '"abc', '{"a":tr', '-']) {
    rejects(text, text.length);
    assert.throws(() => parseJson(text), { message: /^it ends before the JSON value does \(/ }, JSON.stringify(text));
  }
  assert.throws(() => parseJson('{"name":"Rex",}'), { message: 'expected a string key at position 14' });
});

test('arrays and objects parse to their contents', () => {
  assert.deepEqual(parseJson('[]'), []);
  assert.deepEqual(parseJson('[1, "a", null, [true]]'), [1n, 'a', null, [true]]);
  assert.deepEqual(plain(parseJson('{}')), {});
  assert.deepEqual(plain(parseJson('{"a":1,"b":{"c":[2.5,"x"]},"d":null}')), { a: 1n, b: { c: [2.5, 'x'] }, d: null });
});

test('objects have no prototype', () => {
  const value = parseJson('{"a":{"b":1}}') as Record<string, JsonValue>;
  assert.equal(Object.getPrototypeOf(value), null);
  assert.equal(Object.getPrototypeOf(value.a), null);
});

test('a duplicate key is refused, reported at the second key', () => {
  rejects('{"a":1,"a":2}', 7);
  rejects('{"a":1,"b":2,"a":1}');
  rejects('{"a":{"x":1,"x":1}}');
});

test('the same key in different objects is allowed', () => {
  assert.deepEqual(plain(parseJson('{"a":{"a":1},"b":[{"a":2},{"a":3}]}')), {
    a: { a: 1n },
    b: [{ a: 2n }, { a: 3n }],
  });
});

test('keys equal after unescaping are duplicates', () => {
  rejects('{"a":1,"\\u0061":2}');
});

test('a __proto__ key stays an own property and does not change the prototype', () => {
  const value = parseJson('{"__proto__":{"polluted":true},"a":1}') as Record<string, JsonValue>;
  assert.ok(Object.hasOwn(value, '__proto__'));
  assert.deepEqual(Object.keys(value), ['__proto__', 'a']);
  assert.equal(Object.getPrototypeOf(value), null);
  assert.equal((value as Record<string, unknown>).polluted, undefined);
  assert.deepEqual(plain(Object.getOwnPropertyDescriptor(value, '__proto__')?.value as JsonValue), { polluted: true });
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('a nested __proto__ key does not change any prototype', () => {
  const value = parseJson('{"a":{"__proto__":{"x":1}},"b":[{"__proto__":null}]}') as Record<
    string,
    Record<string, JsonValue>
  >;
  assert.equal(Object.getPrototypeOf(value.a), null);
  assert.ok(Object.hasOwn(value.a as object, '__proto__'));
  assert.equal(({} as Record<string, unknown>).x, undefined);
});

test('a constructor or prototype key is an ordinary own property', () => {
  const value = parseJson('{"constructor":{"prototype":{"y":1}}}') as Record<string, JsonValue>;
  assert.deepEqual(plain(value), { constructor: { prototype: { y: 1n } } });
  assert.equal(({} as Record<string, unknown>).y, undefined);
});

test('nesting is limited, 32 levels by default', () => {
  assert.deepEqual(Array.isArray(parseJson(`${'['.repeat(32)}${']'.repeat(32)}`)), true);
  rejects(`${'['.repeat(33)}${']'.repeat(33)}`, 32);
  parseJson(`${'{"a":'.repeat(32)}1${'}'.repeat(32)}`);
  rejects(`${'{"a":'.repeat(33)}1${'}'.repeat(33)}`);
});

test('maxDepth sets the limit, counting the top level as 1', () => {
  assert.deepEqual(parseJson('[[1]]', { maxDepth: 2 }), [[1n]]);
  assert.throws(() => parseJson('[[[1]]]', { maxDepth: 2 }), JsonSyntaxError);
  assert.throws(() => parseJson('[{"a":1}]', { maxDepth: 1 }), JsonSyntaxError);
  assert.equal(parseJson('1', { maxDepth: 0 }), 1n);
  assert.throws(() => parseJson('[]', { maxDepth: 0 }), JsonSyntaxError);
});

test('very deep nesting is refused without a stack overflow', () => {
  rejects('['.repeat(100_000));
  rejects(`${'{"a":'.repeat(100_000)}1`);
});

test('data after the value is refused', () => {
  rejects('{} x', 3);
  rejects('1 2', 2);
  rejects('[]]', 2);
  rejects('"a""b"', 3);
  rejects('{}{}', 2);
  rejects('null,');
  rejects('1\u0000');
});

test('empty input and whitespace alone are refused', () => {
  rejects('', 0);
  rejects(' \t\n\r', 4);
});

test('space, tab, line feed and carriage return are whitespace around and inside values', () => {
  assert.deepEqual(plain(parseJson(' \t\n\r{ \t\n\r"a" \t\n\r: \t\n\r[ 1 ,\n2\t] \t\n\r} \t\n\r')), { a: [1n, 2n] });
});

test('other whitespace characters are refused', () => {
  for (const ws of ['\u000b', '\u000c', '\u00a0', '\u2028', '\u3000', '\ufeff']) {
    rejects(`${ws}1`, 0);
    rejects(`[1,${ws}2]`, 3);
    rejects(`1${ws}`, 1);
  }
});

test('structural errors are refused', () => {
  for (const text of [
    '[1,]',
    '[,1]',
    '[1 2]',
    '{"a":1,}',
    '{"a" 1}',
    '{a:1}',
    "{'a':1}",
    '{"a":1 "b":2}',
    '{,}',
    '[',
    '{',
    ']',
    '}',
    ':',
    '{"a":}',
    '{1:2}',
  ]) {
    rejects(text);
  }
  rejects('[1,]', 3);
});

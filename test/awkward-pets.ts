/**
 * New pets whose JSON texts are hard to get byte for byte right: every escape JSON.stringify makes
 * (quotes, backslashes, each control character), characters it leaves as they are (U+2028, U+007F,
 * non-BMP, combining marks), names that look like the text around them, every status and none, and
 * int64 extremes. The same pets every time: a list of fixed names, then names drawn from their
 * characters by a fixed sequence.
 */
import type { NewPet } from '#dist/pet/pet.js';
import type { PetStatus } from '#dist/pet/contract.js';

const FIXED: readonly string[] = [
  '',
  ' ',
  'Rex',
  '"',
  '\\',
  '\\"',
  '"\\',
  'quote"back\\slash',
  '\\u0000',
  'a\u0000b',
  'tab\there',
  'line\nbreak\r\n',
  '\u2028\u2029',
  '\u007f\u0080\u009f',
  '\uffff',
  '\uFEFFbom',
  'e\u0301',
  'Мурзик',
  '小白',
  '🐶🐱',
  '😀',
  '🐕'.repeat(300),
  'available"}',
  'pending"}',
  'sold"}',
  '7}',
  ',"status":"sold"}',
  '{"id":1,"name":"x"}',
  '"categoryId":9',
  '</script>',
  'x'.repeat(2000),
  ...Array.from({ length: 32 }, (_, c) => `control ${String.fromCharCode(c)} ${c}`),
];
const CHARACTERS = [
  'a',
  'Z',
  '0',
  ' ',
  '"',
  '\\',
  '/',
  '\u0000',
  '\u0001',
  '\b',
  '\f',
  '\n',
  '\r',
  '\t',
  '\u001f',
  '\u007f',
  '\u00e9',
  '\u2028',
  '\u4e2d',
  '\ud83d\udc36',
  '{',
  '}',
  ',',
  ':',
];
const STATUSES: ReadonlyArray<PetStatus | undefined> = [undefined, 'available', 'pending', 'sold'];
const CATEGORIES = [0n, 7n, -1n, 9_223_372_036_854_775_807n, -9_223_372_036_854_775_808n, 123_456_789_012n];

/** `count` pets: the fixed names first, then generated ones of 1–60 characters. */
export function awkwardPets(count: number): NewPet[] {
  let seed = 33;
  const next = (n: number): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
  const pets: NewPet[] = [];
  for (let i = 0; i < count; i++) {
    let name = FIXED[i];
    if (name === undefined) {
      name = '';
      for (let n = 1 + next(60); n > 0; n--) name += CHARACTERS[next(CHARACTERS.length)];
    }
    const status = STATUSES[i % STATUSES.length];
    const categoryId = CATEGORIES[i % CATEGORIES.length] as bigint;
    pets.push(status === undefined ? { name, categoryId } : { name, categoryId, status });
  }
  return pets;
}

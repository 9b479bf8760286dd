/**
 * A strict JSON parser (RFC 8259) for untrusted input, written here because `JSON.parse` in Node 20
 * rounds integers beyond 2^53, keeps the last of duplicate keys, accepts lone surrogates and
 * assigns `__proto__` keys on ordinary objects.
 *
 * The mapping is exact:
 * - an integer literal (no fraction, no exponent) becomes a `bigint`, so int64 values keep every
 *   digit; the one exception is `-0`, which becomes the number -0 (a bigint has no negative zero) so
 *   that validators can refuse it;
 * - a literal with a fraction or exponent becomes a `number`, and one that overflows (`1e400`) is an
 *   error rather than Infinity;
 * - objects have no prototype, a duplicate key is an error, and nesting is bounded.
 */
import { JsonSyntaxError, readEscape } from './json-escape.js';

export { JsonSyntaxError } from './json-escape.js';

export type JsonValue = null | boolean | string | number | bigint | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export interface ParseOptions {
  /** Deepest allowed nesting of arrays and objects; the top level is depth 1. */
  maxDepth?: number;
}

// An integer literal longer than this is refused outright: no field of this API needs it, and
// BigInt parsing cost grows faster than linearly with the number of digits.
const MAX_NUMBER_LENGTH = 64;

export function parseJson(text: string, options: ParseOptions = {}): JsonValue {
  return new Parser(text, options.maxDepth ?? 32).parseDocument();
}

class Parser {
  #text: string;
  #pos = 0;
  #maxDepth: number;

  constructor(text: string, maxDepth: number) {
    this.#text = text;
    this.#maxDepth = maxDepth;
  }

  parseDocument(): JsonValue {
    this.#skipWhitespace();
    const value = this.#parseValue(0);
    this.#skipWhitespace();
    if (this.#pos !== this.#text.length) this.#fail('unexpected data after the JSON value');
    return value;
  }

  #fail(message: string, position = this.#pos): never {
    // Input cut short says so: "expected a string key" at its very end reads as a malformed key.
    if (position >= this.#text.length)
      throw new JsonSyntaxError(`it ends before the JSON value does (${message})`, position);
    throw new JsonSyntaxError(message, position);
  }

  #skipWhitespace(): void {
    const text = this.#text;
    let pos = this.#pos;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) pos++;
      else break;
    }
    this.#pos = pos;
  }

  #parseValue(depth: number): JsonValue {
    const c = this.#text.charCodeAt(this.#pos);
    switch (c) {
      case 0x7b: // {
        return this.#parseObject(depth + 1);
      case 0x5b: // [
        return this.#parseArray(depth + 1);
      case 0x22: // "
        return this.#parseString();
      case 0x74: // t
        return this.#parseLiteral('true', true);
      case 0x66: // f
        return this.#parseLiteral('false', false);
      case 0x6e: // n
        return this.#parseLiteral('null', null);
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.#parseNumber();
        return this.#fail(Number.isNaN(c) ? 'a value was expected' : 'unexpected character');
    }
  }

  #parseLiteral<T extends JsonValue>(word: string, value: T): T {
    if (!this.#text.startsWith(word, this.#pos)) {
      // `tr` at the end is `true` cut short, not a wrong word.
      this.#fail('unexpected character', word.startsWith(this.#text.slice(this.#pos)) ? this.#text.length : this.#pos);
    }
    this.#pos += word.length;
    return value;
  }

  #parseObject(depth: number): JsonObject {
    if (depth > this.#maxDepth) this.#fail(`nesting deeper than ${this.#maxDepth} levels`);
    const object: JsonObject = Object.create(null) as JsonObject;
    this.#pos++; // {
    this.#skipWhitespace();
    if (this.#text.charCodeAt(this.#pos) === 0x7d) {
      this.#pos++;
      return object;
    }
    for (;;) {
      if (this.#text.charCodeAt(this.#pos) !== 0x22) this.#fail('expected a string key');
      const keyPosition = this.#pos;
      const key = this.#parseString();
      if (Object.hasOwn(object, key)) this.#fail(`duplicate key "${key}"`, keyPosition);
      this.#skipWhitespace();
      if (this.#text.charCodeAt(this.#pos) !== 0x3a) this.#fail('expected ":"');
      this.#pos++;
      this.#skipWhitespace();
      object[key] = this.#parseValue(depth);
      this.#skipWhitespace();
      const c = this.#text.charCodeAt(this.#pos++);
      if (c === 0x7d) return object;
      if (c !== 0x2c) this.#fail('expected "," or "}"', this.#pos - 1);
      this.#skipWhitespace();
    }
  }

  #parseArray(depth: number): JsonValue[] {
    if (depth > this.#maxDepth) this.#fail(`nesting deeper than ${this.#maxDepth} levels`);
    const array: JsonValue[] = [];
    this.#pos++; // [
    this.#skipWhitespace();
    if (this.#text.charCodeAt(this.#pos) === 0x5d) {
      this.#pos++;
      return array;
    }
    for (;;) {
      array.push(this.#parseValue(depth));
      this.#skipWhitespace();
      const c = this.#text.charCodeAt(this.#pos++);
      if (c === 0x5d) return array;
      if (c !== 0x2c) this.#fail('expected "," or "]"', this.#pos - 1);
      this.#skipWhitespace();
    }
  }

  #parseString(): string {
    const text = this.#text;
    const start = ++this.#pos; // opening quote
    let pos = start;
    // Fast path: no escapes, the string is one slice of the input.
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        this.#pos = pos + 1;
        return text.slice(start, pos);
      }
      if (c === 0x5c) break;
      if (c < 0x20 || Number.isNaN(c)) this.#checkStringChar(c, pos);
      if (c >= 0xd800 && c <= 0xdfff) pos = this.#checkSurrogatePair(c, pos);
      pos++;
    }
    let result = text.slice(start, pos);
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        this.#pos = pos + 1;
        return result;
      }
      if (c === 0x5c) {
        const unit = readEscape(this.#text, pos);
        pos += unit.length;
        result += unit.value;
        continue;
      }
      if (c < 0x20 || Number.isNaN(c)) this.#checkStringChar(c, pos);
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = this.#checkSurrogatePair(c, pos);
        result += text.slice(pos, next + 1);
        pos = next + 1;
        continue;
      }
      result += text[pos];
      pos++;
    }
  }

  #checkStringChar(c: number, pos: number): void {
    if (Number.isNaN(c)) this.#fail('unterminated string', pos);
    this.#fail('unescaped control character in string', pos);
  }

  /** A raw surrogate must be a high one followed by a low one; returns the position of the last unit. */
  #checkSurrogatePair(c: number, pos: number): number {
    const next = this.#text.charCodeAt(pos + 1);
    if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) return pos + 1;
    return this.#fail('lone surrogate in string', pos);
  }

  #parseNumber(): number | bigint {
    const text = this.#text;
    const start = this.#pos;
    let pos = start;
    if (text.charCodeAt(pos) === 0x2d) pos++;
    const firstDigit = text.charCodeAt(pos);
    if (firstDigit === 0x30) pos++;
    else if (firstDigit >= 0x31 && firstDigit <= 0x39) pos = this.#digits(pos);
    else this.#fail('invalid number', pos);
    let integer = true;
    if (text.charCodeAt(pos) === 0x2e) {
      integer = false;
      if (!isDigit(text.charCodeAt(pos + 1))) this.#fail('invalid number', pos + 1);
      pos = this.#digits(pos + 1);
    }
    const e = text.charCodeAt(pos);
    if (e === 0x65 || e === 0x45) {
      integer = false;
      pos++;
      const sign = text.charCodeAt(pos);
      if (sign === 0x2b || sign === 0x2d) pos++;
      if (!isDigit(text.charCodeAt(pos))) this.#fail('invalid number', pos);
      pos = this.#digits(pos);
    }
    if (pos - start > MAX_NUMBER_LENGTH) this.#fail(`number longer than ${MAX_NUMBER_LENGTH} characters`, start);
    this.#pos = pos;
    const literal = text.slice(start, pos);
    if (integer) return literal === '-0' ? -0 : BigInt(literal);
    const value = Number(literal);
    if (!Number.isFinite(value)) this.#fail('number out of range', start);
    return value;
  }

  #digits(pos: number): number {
    while (isDigit(this.#text.charCodeAt(pos))) pos++;
    return pos;
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

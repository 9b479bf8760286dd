/** The parser's error, and the decoding of one backslash escape inside a JSON string. */
export class JsonSyntaxError extends SyntaxError {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(`${message} at position ${position}`);
    this.name = 'JsonSyntaxError';
  }
}

/** Decodes the escape at `pos` (a backslash): its value and how many characters it took. */
export function readEscape(text: string, pos: number): { value: string; length: number } {
  const c = text.charCodeAt(pos + 1);
  switch (c) {
    case 0x22:
      return { value: '"', length: 2 };
    case 0x5c:
      return { value: '\\', length: 2 };
    case 0x2f:
      return { value: '/', length: 2 };
    case 0x62:
      return { value: '\b', length: 2 };
    case 0x66:
      return { value: '\f', length: 2 };
    case 0x6e:
      return { value: '\n', length: 2 };
    case 0x72:
      return { value: '\r', length: 2 };
    case 0x74:
      return { value: '\t', length: 2 };
    case 0x75: {
      // u
      const unit = hex4(text, pos + 2);
      if (unit < 0xd800 || unit > 0xdfff) return { value: String.fromCharCode(unit), length: 6 };
      // A \u escape for a surrogate must be a high one immediately followed by an escaped low one.
      if (unit <= 0xdbff && text.charCodeAt(pos + 6) === 0x5c && text.charCodeAt(pos + 7) === 0x75) {
        const low = hex4(text, pos + 8);
        if (low >= 0xdc00 && low <= 0xdfff) return { value: String.fromCharCode(unit, low), length: 12 };
      }
      throw new JsonSyntaxError('lone surrogate in string', pos);
    }
    default:
      throw new JsonSyntaxError('invalid escape in string', pos);
  }
}

function hex4(text: string, pos: number): number {
  let value = 0;
  for (let i = pos; i < pos + 4; i++) {
    const c = text.charCodeAt(i);
    let digit: number;
    if (c >= 0x30 && c <= 0x39) digit = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) digit = c - 0x57;
    else if (c >= 0x41 && c <= 0x46) digit = c - 0x37;
    else throw new JsonSyntaxError('invalid \\u escape', i);
    value = value * 16 + digit;
  }
  return value;
}

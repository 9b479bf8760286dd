import { randomFillSync } from 'node:crypto';

// Ids are made BATCH at a time: one randomFillSync, their text decoded once, each request taking a
// 36-character slice of one flat string. crypto.randomUUID's pieced-together string is measurably
// dearer per request (bench/results.md, "Why the code is shaped this way").
const BATCH = 128;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
const random = Buffer.alloc(16 * BATCH);
const text = Buffer.alloc(36 * BATCH);
let ids = '';
let next = BATCH;

/** A new random UUID (RFC 9562 §5.4, version 4: 122 random bits), in its 36-character form. */
export function newRequestId(): string {
  if (next === BATCH) refill();
  const start = 36 * next++;
  return ids.slice(start, start + 36);
}

function refill(): void {
  randomFillSync(random);
  let at = 0;
  for (let i = 0; i < random.length; i++) {
    const position = i % 16;
    let byte = random[i] as number;
    if (position === 6)
      byte = (byte & 0x0f) | 0x40; // version 4
    else if (position === 8) byte = (byte & 0x3f) | 0x80; // variant 10
    if (position === 4 || position === 6 || position === 8 || position === 10) text[at++] = 0x2d; // '-'
    text[at++] = HEX[byte >> 4] as number;
    text[at++] = HEX[byte & 15] as number;
  }
  ids = text.toString('latin1');
  next = 0;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A client's X-Request-Id is echoed only when it is short and plain, so logs and headers stay clean. */
export function acceptableRequestId(value: unknown): value is string {
  return typeof value === 'string' && REQUEST_ID.test(value);
}

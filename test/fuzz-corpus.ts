/**
 * A deterministic corpus of malformed (and some valid) HTTP requests for the fuzz test, and a raw
 * keep-alive HTTP/1.1 client to send them byte for byte. Every case carries what may answer it: the
 * service (statuses it may send, with the pet a 201 must create) or Node's own HTTP parser (a bare
 * 400/431 with no body, for bytes that never reach the service).
 */
import { connect, type Socket } from 'node:net';

export interface ExpectedPet {
  name: string;
  /** Exact decimal digits, as the service must echo them. */
  categoryId: string;
  status?: string;
}

export interface Expected {
  /** Statuses the service itself may answer with. */
  app: readonly number[];
  /** Statuses Node's parser may answer with, before the service sees the request (bare, no body). */
  node: readonly number[];
  /** What a 201 must have created (set only when 201 is among `app`). */
  pet?: ExpectedPet;
}

export interface FuzzCase {
  index: number;
  family: string;
  /** A short human description, for failure messages. */
  label: string;
  bytes: Buffer;
  /** The request is HEAD: its answer has no body whatever Content-Length says. */
  head: boolean;
  /** Listen on after the answer until the server closes: framing errors must not get a second answer. */
  drain: boolean;
  expected: Expected;
}

// ---------------------------------------------------------------------------------------------
// Seeded PRNG (mulberry32): the same seed gives the same corpus on every run.

export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }

  /** A uniformly random int64. */
  int64(): bigint {
    const hi = BigInt(this.int(2 ** 32));
    const lo = BigInt(this.int(2 ** 32));
    return BigInt.asIntN(64, (hi << 32n) | lo);
  }
}

// ---------------------------------------------------------------------------------------------
// Request building

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

export interface CorpusOptions {
  /** A key the server accepts. */
  key: string;
  /** The server's body limit in bytes (bodies above it must get 413). */
  bodyLimit: number;
  /** The server's maxHeaderSize in bytes (header sections well above it must get Node's 431). */
  maxHeaderSize: number;
}

type HeaderValue = string | Buffer;

interface RequestSpec {
  method?: string | Buffer;
  target?: string | Buffer;
  /** A valid key by default; false for none; a string is sent as the whole Authorization value. */
  auth?: boolean | string;
  contentType?: string;
  headers?: Array<[string, HeaderValue]>;
  body?: string | Buffer;
  /** Send the body with Transfer-Encoding: chunked, in pieces of 1–64 bytes. */
  chunked?: boolean;
  /** Leave out Content-Length even though there is a body (for raw framing experiments). */
  noLength?: boolean;
  /** Leave out Host. */
  noHost?: boolean;
  /** Replaces the request line and header block entirely (line endings included). */
  rawHead?: Buffer;
}

const CRLF = '\r\n';

function toBuffer(value: string | Buffer): Buffer {
  return typeof value === 'string' ? Buffer.from(value, 'latin1') : value;
}

/** Builds raw request bytes. Strings in the head are latin1 (one byte per char); bodies are UTF-8. */
export function buildRequest(spec: RequestSpec, key: string, random?: Random): Buffer {
  const body =
    spec.body === undefined ? undefined : typeof spec.body === 'string' ? Buffer.from(spec.body, 'utf8') : spec.body;
  if (spec.rawHead !== undefined) return Buffer.concat([spec.rawHead, body ?? Buffer.alloc(0)]);
  const parts: Buffer[] = [
    toBuffer(spec.method ?? 'GET'),
    toBuffer(' '),
    toBuffer(spec.target ?? '/v1/pets'),
    toBuffer(` HTTP/1.1${CRLF}`),
  ];
  const header = (name: string, value: HeaderValue): void => {
    parts.push(toBuffer(`${name}: `), toBuffer(value), toBuffer(CRLF));
  };
  if (spec.noHost !== true) header('Host', '127.0.0.1');
  const auth = spec.auth ?? true;
  if (auth === true) header('Authorization', `Bearer ${key}`);
  else if (typeof auth === 'string') header('Authorization', auth);
  if (spec.contentType !== undefined) header('Content-Type', spec.contentType);
  for (const [name, value] of spec.headers ?? []) header(name, value);
  let payload = body;
  if (body !== undefined && spec.chunked === true) {
    header('Transfer-Encoding', 'chunked');
    const chunks: Buffer[] = [];
    let offset = 0;
    while (offset < body.length) {
      const size = Math.min(body.length - offset, random === undefined ? 64 : random.range(1, 64));
      chunks.push(toBuffer(`${size.toString(16)}${CRLF}`), body.subarray(offset, offset + size), toBuffer(CRLF));
      offset += size;
    }
    chunks.push(toBuffer(`0${CRLF}${CRLF}`));
    payload = Buffer.concat(chunks);
  } else if (body !== undefined && spec.noLength !== true) {
    header('Content-Length', String(body.length));
  }
  parts.push(toBuffer(CRLF));
  if (payload !== undefined) parts.push(payload);
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------------------------------------
// Valid pets

const PET_STATUSES = ['available', 'pending', 'sold'] as const;
const JSON_WS = ['', '', '', ' ', '\n', '\t', '\r\n  '];

const VALID_NAMES: readonly string[] = [
  'Rex',
  'Fido the 3rd',
  'Мурзик',
  '小白',
  'Ünïcødé',
  '🐶🐱',
  'a\u0000b',
  'tab\there',
  'line\nbreak',
  'quote"back\\slash',
  '</script><script>alert(1)</script>',
  '{"name":"inner"}',
  '__proto__',
  'constructor',
  'prototype',
  ' ',
  'e\u0301',
  '\u2028\u2029',
  '\uFEFFbom',
  'x'.repeat(256),
  '🐕'.repeat(256),
  'é'.repeat(256),
  'a/b',
  '%E0%A4%A',
  '-0',
  '1e400',
  'NaN',
  'null',
  '\u007f\u0080\u009f',
  '\uffff',
  '😀',
];

function randomAsciiName(r: Random): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.';
  let out = '';
  const length = r.range(1, 24);
  for (let i = 0; i < length; i++) out += alphabet[r.int(alphabet.length)];
  return out;
}

function randomName(r: Random): string {
  return r.chance(0.5) ? randomAsciiName(r) : r.pick(VALID_NAMES);
}

/** A JSON string literal for `value`, written in one of several equivalent ways. */
function stringLiteral(r: Random, value: string): string {
  const plain = JSON.stringify(value);
  switch (r.int(4)) {
    case 0: // every non-ASCII UTF-16 unit escaped (surrogate pairs as escaped pairs)
      return plain.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    case 1: // solidus escaped
      return plain.replaceAll('/', '\\/');
    default:
      return plain;
  }
}

function randomCategoryId(r: Random): bigint {
  return r.pick<() => bigint>([
    () => 0n,
    () => 1n,
    () => -1n,
    () => BigInt(r.range(1, 1000)),
    () => BigInt(-r.range(1, 1000)),
    () => 2n ** 53n - 1n,
    () => 2n ** 53n,
    () => 2n ** 53n + 1n,
    () => -(2n ** 53n) - 1n,
    () => INT64_MAX,
    () => INT64_MIN,
    () => INT64_MAX - 1n,
    () => r.int64(),
    () => r.int64(),
    () => 1234567890123456789n,
  ])();
}

interface PetBody {
  text: string;
  pet: ExpectedPet;
}

/** A valid NewPet body with random (but legal) field order, whitespace and string escapes. */
function validPetBody(r: Random): PetBody {
  const name = randomName(r);
  const categoryId = randomCategoryId(r);
  const status = r.chance(0.6) ? r.pick(PET_STATUSES) : undefined;
  const keyLiteral = (key: string): string => {
    if (r.chance(0.1)) return `"${key.slice(0, 1)}\\u00${key.charCodeAt(1).toString(16)}${key.slice(2)}"`;
    return `"${key}"`;
  };
  const fields: Array<[string, string]> = [
    ['name', stringLiteral(r, name)],
    ['categoryId', categoryId.toString()],
  ];
  if (status !== undefined) fields.push(['status', stringLiteral(r, status)]);
  const ws = (): string => r.pick(JSON_WS);
  const members = r.shuffle(fields).map(([k, v]) => `${ws()}${keyLiteral(k)}${ws()}:${ws()}${v}${ws()}`);
  const text = `${ws()}{${members.join(',')}}${ws()}`;
  const pet: ExpectedPet = { name, categoryId: categoryId.toString() };
  if (status !== undefined) pet.status = status;
  return { text, pet };
}

/** A compact valid body with the given raw literals spliced in (for single-field defects). */
function bodyWith(fields: Record<string, string>): string {
  return `{${Object.entries(fields)
    .map(([k, v]) => `"${k}":${v}`)
    .join(',')}}`;
}

const BASE = { name: '"Rex"', categoryId: '7' };

// ---------------------------------------------------------------------------------------------
// Families. Each returns a request spec and what may answer it.

interface Draft {
  label: string;
  spec: RequestSpec;
  expected: Expected;
}

const APP = (...statuses: number[]): Expected => ({ app: statuses, node: [] });
const NODE = (...statuses: number[]): Expected => ({ app: [], node: statuses });
const JSON_TYPE = 'application/json';

function post(body: string | Buffer, extra: Partial<RequestSpec> = {}): RequestSpec {
  return { method: 'POST', target: '/v1/pets', contentType: JSON_TYPE, body, ...extra };
}

type Family = (r: Random, o: CorpusOptions) => Draft;

const validCreate: Family = (r) => {
  const { text, pet } = validPetBody(r);
  const contentType = r.pick([
    JSON_TYPE,
    JSON_TYPE,
    'application/json; charset=utf-8',
    'Application/JSON',
    'application/json;charset=UTF-8',
    'application/json ; foo=bar',
  ]);
  return {
    label: `valid create ${text.slice(0, 60)}`,
    spec: post(text, { contentType, chunked: r.chance(0.2) }),
    expected: { app: [201], node: [], pet },
  };
};

const validRead: Family = (r) => {
  switch (r.int(6)) {
    case 0:
      return { label: 'list', spec: { target: '/v1/pets' }, expected: APP(200) };
    case 1: {
      const query = r
        .shuffle([`limit=${r.range(1, 100)}`, `status=${r.pick(PET_STATUSES)}`, `after=${r.range(0, 500)}`])
        .slice(0, r.range(1, 3))
        .join('&');
      return { label: `list ?${query}`, spec: { target: `/v1/pets?${query}` }, expected: APP(200) };
    }
    case 2:
      return { label: 'get one', spec: { target: `/v1/pets/${r.range(1, 400)}` }, expected: APP(200, 404) };
    case 3:
      return { label: 'openapi', spec: { target: '/v1/openapi.json', auth: false }, expected: APP(200) };
    case 4:
      return { label: 'healthz', spec: { target: '/healthz', auth: false }, expected: APP(200) };
    default:
      return { label: 'list with a GET body', spec: { target: '/v1/pets', body: 'ignored' }, expected: APP(200) };
  }
};

const SYNTAX_ERRORS: readonly string[] = [
  `{'name':'x','categoryId':1}`,
  `{name:"x",categoryId:1}`,
  `{"name":"x","categoryId":1,}`,
  `{"name":"x",,"categoryId":1}`,
  `{"name":"x" "categoryId":1}`,
  `{"name":"x","categoryId":1 /*c*/}`,
  `// c\n{"name":"x","categoryId":1}`,
  `{"name":"x","categoryId":NaN}`,
  `{"name":"x","categoryId":Infinity}`,
  `{"name":"x","categoryId":-Infinity}`,
  `{"name":"x","categoryId":012}`,
  `{"name":"x","categoryId":+1}`,
  `{"name":"x","categoryId":.5}`,
  `{"name":"x","categoryId":1.}`,
  `{"name":"x","categoryId":0x10}`,
  `{"name":"x","categoryId":1_000}`,
  `{"name":"x\\x41","categoryId":1}`,
  `{"name":"x\\u12","categoryId":1}`,
  `{"name":"x\\uZZZZ","categoryId":1}`,
  `{"name":"x\\'","categoryId":1}`,
  `{"name":"x\ty","categoryId":1}`,
  `{"name":"x","categoryId":1}}`,
  `{{"name":"x"}}`,
  `{"name":"x","categoryId":tru}`,
  `{"name":undefined,"categoryId":1}`,
  `{"name":"x","categoryId":1]`,
  `["name","x"}`,
  `{"name":"x":"y","categoryId":1}`,
  `\u00a0{"name":"x","categoryId":1}`,
  `{"name":"x","categoryId":1}\u0000`,
  `{"categoryId":1,"name":"unterminated}`,
  `{"name":"x","categoryId":1`,
  `{"name":"x","categoryId":-}`,
  `{"name":"x","categoryId":--1}`,
  `{"name":"x","categoryId":1e}`,
  `{"name":"x","categoryId":1e+}`,
  `{"name":"x","categoryId":True}`,
  `{"name":"x","categoryId":nul}`,
  `{"name":"x"\n,"categoryId":1\n,}`,
  `{"name"}`,
  `{:1}`,
  `{"name":"x","categoryId":1}{"name":"y","categoryId":2}`,
  `{"name":"x","categoryId":1} 1`,
  `\u001e{"name":"x","categoryId":1}`,
  `{"name":"x","categoryId":1}\u000b`,
  `{"name":"\\","categoryId":1}`,
];

const CONTROL_BYTES = [
  ...Array.from({ length: 9 }, (_, i) => i),
  0x0b,
  0x0c,
  ...Array.from({ length: 18 }, (_, i) => 0x0e + i),
];
const BAD_UTF8: readonly number[][] = [
  [0xff],
  [0xfe],
  [0xc0],
  [0xc1],
  [0xf5],
  [0x80],
  [0xbf],
  [0xed, 0xa0, 0x80],
  [0xc0, 0xaf],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
];

function insertAt(buffer: Buffer, position: number, bytes: readonly number[]): Buffer {
  return Buffer.concat([buffer.subarray(0, position), Buffer.from(bytes), buffer.subarray(position)]);
}

const brokenJson: Family = (r) => {
  const base = Buffer.from(validPetBody(r).text.trim(), 'utf8');
  switch (r.int(5)) {
    case 0: {
      const cut = r.int(base.length);
      return { label: `truncated at ${cut}`, spec: post(base.subarray(0, cut)), expected: APP(400) };
    }
    case 1: {
      const byte = r.pick(CONTROL_BYTES);
      const at = r.int(base.length + 1);
      return {
        label: `control byte 0x${byte.toString(16)} at ${at}`,
        spec: post(insertAt(base, at, [byte])),
        expected: APP(400),
      };
    }
    case 2: {
      const bytes = r.pick(BAD_UTF8);
      const at = r.int(base.length + 1);
      return {
        label: `invalid UTF-8 ${Buffer.from(bytes).toString('hex')} at ${at}`,
        spec: post(insertAt(base, at, bytes)),
        expected: APP(400),
      };
    }
    case 3: {
      const tail = r.pick(['x', '}', ',', '{}', ' 1', 'null', '\u0000', ']', '"']);
      return {
        label: `trailing ${JSON.stringify(tail)}`,
        spec: post(Buffer.concat([base, Buffer.from(tail)])),
        expected: APP(400),
      };
    }
    default: {
      const text = r.pick(SYNTAX_ERRORS);
      return { label: `syntax ${JSON.stringify(text).slice(0, 60)}`, spec: post(text), expected: APP(400) };
    }
  }
};

const deepNesting: Family = (r, o) => {
  const depth = r.pick([17, 20, 33, 64, 100, 1000, 5000, 8000]);
  const body = r.pick<() => [string, string]>([
    () => [`array depth ${depth}`, '['.repeat(depth) + ']'.repeat(depth)],
    () => [`object depth ${depth}`, `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`],
    () => [`status depth ${depth}`, `{"name":"x","categoryId":1,"status":${'['.repeat(depth)}${']'.repeat(depth)}}`],
    () => [`unbalanced depth ${depth}`, `{"name":${'['.repeat(depth)}`],
    () => ['depth 16 in a field', `{"name":"x","categoryId":${'['.repeat(15)}1${']'.repeat(15)}}`],
  ])();
  // Nesting that does not fit in the body limit is refused for its size before it is parsed.
  return { label: body[0], spec: post(body[1]), expected: APP(Buffer.byteLength(body[1]) > o.bodyLimit ? 413 : 400) };
};

const BAD_NUMBERS: readonly string[] = [
  '1e400',
  '-1e400',
  '1E400',
  '1e2',
  '1.0',
  '1.5',
  '0.0',
  '-0.0',
  '2e-400',
  '1e-7',
  '9223372036854775808',
  '-9223372036854775809',
  '18446744073709551616',
  `1${'0'.repeat(30)}`,
  `1${'0'.repeat(70)}`,
  '9'.repeat(63),
  '9'.repeat(65),
  `0.${'0'.repeat(100)}1`,
  '123456789012345678901234567890e-10',
  '9007199254740993.0',
  '-9223372036854775808.5',
  '4.2e1',
];

const numbers: Family = (r) => {
  if (r.chance(0.15)) {
    // -0 is an integer literal that no int64 distinguishes from 0: refused (the service's choice) or stored as 0.
    return {
      label: 'categoryId -0',
      spec: post(bodyWith({ ...BASE, categoryId: '-0' })),
      expected: { app: [201, 400], node: [], pet: { name: 'Rex', categoryId: '0' } },
    };
  }
  const literal = r.pick(BAD_NUMBERS);
  if (r.chance(0.2)) return { label: `bare number ${literal.slice(0, 30)}`, spec: post(literal), expected: APP(400) };
  return {
    label: `categoryId ${literal.slice(0, 30)}`,
    spec: post(bodyWith({ ...BASE, categoryId: literal })),
    expected: APP(400),
  };
};

const LONE_SURROGATES: readonly string[] = [
  '\\ud800',
  '\\udbff',
  '\\udc00',
  '\\udfff',
  '\\ud800x',
  '\\ud800\\u0041',
  '\\udc00\\ud800',
  'a\\ud83d',
  '\\ud83d\\ud83d',
  '\\uD800',
  '\\ud800\\n',
];
const RAW_SURROGATES: readonly number[][] = [
  [0xed, 0xa0, 0x80],
  [0xed, 0xbf, 0xbf],
  [0xed, 0xb0, 0x80],
  [0xed, 0xa0, 0xbd, 0xed, 0xb0, 0x80],
  [0xc0, 0xaf],
  [0xe0, 0x80, 0xaf],
  [0xf0, 0x80, 0x80, 0xaf],
  [0xf4, 0x90, 0x80, 0x80],
  [0xe2, 0x82],
];

const surrogates: Family = (r) => {
  switch (r.int(4)) {
    case 0: {
      const s = r.pick(LONE_SURROGATES);
      return {
        label: `escaped lone surrogate ${s} in name`,
        spec: post(bodyWith({ ...BASE, name: `"${s}"` })),
        expected: APP(400),
      };
    }
    case 1: {
      const s = r.pick(LONE_SURROGATES);
      return {
        label: `escaped lone surrogate ${s} in key`,
        spec: post(`{"${s}":1,"name":"x","categoryId":1}`),
        expected: APP(400),
      };
    }
    case 2: {
      const bytes = r.pick(RAW_SURROGATES);
      const body = Buffer.concat([Buffer.from('{"name":"a'), Buffer.from(bytes), Buffer.from('b","categoryId":1}')]);
      return { label: `raw bytes ${Buffer.from(bytes).toString('hex')} in name`, spec: post(body), expected: APP(400) };
    }
    default:
      return {
        label: 'escaped surrogate pair',
        spec: post(bodyWith({ ...BASE, name: '"\\ud83d\\ude00!"' })),
        expected: { app: [201], node: [], pet: { name: '😀!', categoryId: '7' } },
      };
  }
};

const nulBytes: Family = (r) => {
  const base = Buffer.from(validPetBody(r).text, 'utf8');
  switch (r.int(5)) {
    case 0:
    case 1: {
      const at = r.int(base.length + 1);
      return { label: `raw NUL at ${at}`, spec: post(insertAt(base, at, [0])), expected: APP(400) };
    }
    case 2:
      return { label: 'body is one NUL', spec: post(Buffer.from([0])), expected: APP(400) };
    case 3:
      return {
        label: 'escaped NUL in a key',
        spec: post('{"name\\u0000":"x","name":"y","categoryId":1}'),
        expected: APP(400),
      };
    default:
      return {
        label: 'escaped NUL in name',
        spec: post(bodyWith({ ...BASE, name: '"nul\\u0000byte"' })),
        expected: { app: [201], node: [], pet: { name: 'nul\u0000byte', categoryId: '7' } },
      };
  }
};

const duplicateKeys: Family = (r) => {
  const bodies = [
    '{"name":"a","name":"b","categoryId":1}',
    '{"name":"a","name":"a","categoryId":1}',
    '{"name":"a","categoryId":1,"categoryId":2}',
    '{"name":"a","categoryId":1,"categoryId":1}',
    '{"name":"a","categoryId":1,"status":"sold","status":"available"}',
    '{"name":"a","n\\u0061me":"b","categoryId":1}',
    '{"categoryId":1,"name":"a","\\u006eame":"a"}',
    '{"x":1,"x":2,"name":"a","categoryId":1}',
    '{"name":"a","categoryId":1,"status":"sold","status":"sold"}',
  ];
  const body = r.pick(bodies);
  return { label: `duplicate keys ${body}`, spec: post(body), expected: APP(400) };
};

const WRONG: Record<string, readonly string[]> = {
  name: [
    '1',
    'true',
    'false',
    'null',
    '[]',
    '{}',
    '["a"]',
    '{"a":1}',
    '1.5',
    '""',
    `"${'x'.repeat(257)}"`,
    `"${'🐕'.repeat(257)}"`,
    `"${'y'.repeat(1000)}"`,
  ],
  categoryId: ['"1"', '""', 'true', 'null', '[]', '{}', '[1]', '1.5', '"9007199254740993"', '{"$numberLong":"1"}'],
  status: [
    '""',
    '"AVAILABLE"',
    '"Available"',
    '" available"',
    '"available "',
    '1',
    'true',
    'null',
    '[]',
    '{}',
    '"unknown"',
    '"sold\\u0000"',
    '["sold"]',
  ],
};

const wrongTypes: Family = (r) => {
  switch (r.int(5)) {
    case 0: {
      const missing = r.pick([
        '{"name":"x"}',
        '{"categoryId":1}',
        '{}',
        '{"status":"sold"}',
        '{"name":"x","status":"sold"}',
      ]);
      return { label: `missing field ${missing}`, spec: post(missing), expected: APP(400) };
    }
    case 1: {
      const extra = r.pick([
        '"id":1',
        '"id":null',
        '"tags":[]',
        '"Name":"x"',
        '"categoryID":1',
        '"name ":"x"',
        '"":1',
        '"category":{"id":1}',
      ]);
      return {
        label: `unknown field ${extra}`,
        spec: post(`{"name":"x","categoryId":1,${extra}}`),
        expected: APP(400),
      };
    }
    default: {
      const field = r.pick(['name', 'categoryId', 'status']);
      const value = r.pick(WRONG[field] as readonly string[]);
      return {
        label: `${field}: ${value.slice(0, 30)}`,
        spec: post(bodyWith({ ...BASE, [field]: value })),
        expected: APP(400),
      };
    }
  }
};

const nonObject: Family = (r) => {
  const body = r.pick([
    '[]',
    '[{"name":"x","categoryId":1}]',
    '"str"',
    '1',
    '-0',
    '1e400',
    'null',
    'true',
    'false',
    '  ',
    '\n',
    '""',
    '"{\\"name\\":\\"x\\",\\"categoryId\\":1}"',
  ]);
  return { label: `non-object ${JSON.stringify(body)}`, spec: post(body), expected: APP(400) };
};

const PROTO_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  '__pro\\u0074o__',
  'hasOwnProperty',
  'toString',
  'valueOf',
  '__defineGetter__',
  'isPrototypeOf',
];
const PROTO_VALUES = [
  '{"polluted":"yes"}',
  '{"prototype":{"polluted":"yes"}}',
  '{"__proto__":{"polluted":"yes"}}',
  'null',
  '1',
  '"x"',
  '[]',
];

const prototypeKeys: Family = (r) => {
  const key = r.pick(PROTO_KEYS);
  const value = r.pick(PROTO_VALUES);
  switch (r.int(4)) {
    case 0:
      return { label: `only ${key}`, spec: post(`{"${key}":${value}}`), expected: APP(400) };
    case 1: {
      const field = r.pick(['name', 'categoryId', 'status']);
      return {
        label: `${key} nested in ${field}`,
        spec: post(bodyWith({ ...BASE, [field]: `{"${key}":${value}}` })),
        expected: APP(400),
      };
    }
    default: {
      const members = r.shuffle([`"name":"x"`, `"categoryId":1`, `"${key}":${value}`]);
      return { label: `${key}:${value} among valid fields`, spec: post(`{${members.join(',')}}`), expected: APP(400) };
    }
  }
};

const PATH_CASES: ReadonlyArray<[string, Expected]> = [
  ...[
    '%E0%A4%A',
    '%',
    '%Z',
    '%ZZ',
    '%C0%80',
    '%ED%A0%80',
    '%FF',
    '%E0%A4',
    '1%',
    '%31%',
    '%00',
    '1%00',
    '%2B1',
    '%20%31',
    'abc',
    '1.0',
    '1e3',
    '0x1',
    '99999999999999999999',
    '9'.repeat(41),
    '-9223372036854775809',
    '9223372036854775808',
    '..',
    '1;x',
    'a'.repeat(5000),
    '%25',
    '%u0031',
  ].map((p): [string, Expected] => [`/v1/pets/${p}`, APP(400)]),
  ...['-1', '0', '9223372036854775807', '-9223372036854775808', '9007199254740993'].map((p): [string, Expected] => [
    `/v1/pets/${p}`,
    APP(404),
  ]),
  ['/v1/pets/%31', APP(200, 404)],
  ['/v1/pets/-0', APP(400, 404)],
  ['/v1/pets/00001', APP(200, 400, 404)],
  ['/v1/pets%2F1', APP(404)],
  ['/v1/%70ets', APP(200, 404)],
];

const QUERY_CASES: ReadonlyArray<[string, Expected]> = [
  ...[
    'limit=%ZZ',
    'limit=%',
    'limit=%E0%A4%A',
    'status=%E0%A4%A',
    'after=%80',
    'limit=1%00',
    'status=available%00',
    'limit=%2B1',
    'limit=+1',
    'limit=1e1',
    'limit=2.5',
    'limit=',
    'limit=-3',
    'limit=0',
    'limit=101',
    'limit=99999999999',
    'limit=%201',
    'status=',
    'status=AVAILABLE',
    'status=available,sold',
    'status=available+',
    'after=abc',
    'after=1.5',
    'after=99999999999999999999',
    'limit',
    'status',
    'after=',
    'limit=0x10',
    'limit=%EF%BC%91',
  ].map((q): [string, Expected] => [q, APP(400)]),
  ...[
    'limit=%31%30',
    'status=%61vailable',
    'after=-5',
    'after=9223372036854775807',
    'foo=bar',
    '=',
    '&&',
    '?limit=1',
    'limit=100',
    'limit=1&foo=%20',
    'LIMIT=5000',
    'limit=1&',
    '&limit=2',
    'status=sold&limit=3',
    'after=0&limit=1',
  ].map((q): [string, Expected] => [q, APP(200)]),
  // A malformed name or the value of an unknown parameter is no parameter the service reads: ignored.
  ['%ZZ=1', APP(200)],
  ['foo=%ZZ', APP(200)],
  ['limit=007', APP(200, 400)],
];

const badPercent: Family = (r) => {
  if (r.chance(0.5)) {
    const [target, expected] = r.pick(PATH_CASES);
    return { label: `path ${target.slice(0, 60)}`, spec: { target }, expected };
  }
  const [query, expected] = r.pick(QUERY_CASES);
  return { label: `query ?${query}`, spec: { target: `/v1/pets?${query}` }, expected };
};

const repeatedQuery: Family = (r) => {
  const repeatable = ['limit', 'status', 'after'];
  const value = (name: string): string =>
    name === 'limit' ? String(r.range(1, 100)) : name === 'status' ? r.pick(PET_STATUSES) : String(r.range(0, 50));
  if (r.chance(0.25)) {
    const q = r.pick(['limit=1&Limit=2', 'foo=1&foo=2', 'x=&x=&x=', `status=sold&${'foo=1&'.repeat(50)}limit=2`]);
    return { label: `repeated unknown ?${q.slice(0, 40)}`, spec: { target: `/v1/pets?${q}` }, expected: APP(200) };
  }
  const name = r.pick(repeatable);
  const pairs = [`${name}=${value(name)}`, `${name}=${value(name)}`];
  if (r.chance(0.5)) pairs.push(`${name}=${value(name)}`);
  const others = repeatable
    .filter((n) => n !== name)
    .filter(() => r.chance(0.4))
    .map((n) => `${n}=${value(n)}`);
  const query = r.shuffle([...pairs, ...others]).join('&');
  return { label: `repeated ?${query}`, spec: { target: `/v1/pets?${query}` }, expected: APP(400) };
};

const oversizedHeaders: Family = (r, o) => {
  const big = r.range(o.maxHeaderSize + 1024, o.maxHeaderSize * 3);
  switch (r.int(5)) {
    case 0:
      return { label: `one ${big}-byte header`, spec: { headers: [['X-Pad', 'a'.repeat(big)]] }, expected: NODE(431) };
    case 1: {
      const count = Math.ceil(big / 100);
      return {
        label: `${count} headers`,
        spec: { headers: Array.from({ length: count }, (_, i): [string, string] => [`X-H${i}`, 'b'.repeat(90)]) },
        expected: NODE(431),
      };
    }
    case 2:
      return { label: `${big}-byte URL`, spec: { target: `/v1/pets?pad=${'c'.repeat(big)}` }, expected: NODE(431) };
    case 3:
      return {
        label: `${big}-byte header on a create`,
        spec: post(bodyWith(BASE), { headers: [['Cookie', 'd'.repeat(big)]] }),
        expected: NODE(431),
      };
    default:
      return {
        label: 'headers well under the limit',
        spec: { headers: [['X-Pad', 'e'.repeat(Math.floor(o.maxHeaderSize / 4))]] },
        expected: APP(200),
      };
  }
};

// Methods llhttp knows but the service does not route: they reach the service and get a 405.
const KNOWN_METHODS = [
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'PROPFIND',
  'PROPPATCH',
  'MKCOL',
  'COPY',
  'MOVE',
  'LOCK',
  'UNLOCK',
  'SEARCH',
  'PURGE',
  'REPORT',
  'MERGE',
  'NOTIFY',
  'SUBSCRIBE',
  'LINK',
  'QUERY',
  'ACL',
];

const oddMethods: Family = (r) => {
  switch (r.int(6)) {
    case 0:
    case 1: {
      const method = r.pick(KNOWN_METHODS);
      const [target, allow] = r.pick([
        ['/v1/pets', 'GET, POST'],
        ['/v1/pets/1', 'GET'],
        ['/v1/openapi.json', 'GET'],
      ] as const);
      const withBody = r.chance(0.3);
      const spec: RequestSpec = {
        method,
        target,
        ...(withBody ? { contentType: JSON_TYPE, body: bodyWith(BASE) } : {}),
      };
      return { label: `${method} ${target} (Allow: ${allow})`, spec, expected: APP(405) };
    }
    case 2: {
      const method = r.pick(KNOWN_METHODS);
      return {
        label: `${method} without a key`,
        spec: { method, target: '/v1/pets', auth: false },
        expected: APP(401),
      };
    }
    case 3:
      return { label: 'HEAD', spec: { method: 'HEAD', target: '/v1/pets' }, expected: APP(200, 405) };
    case 4: {
      const method = r.pick([
        'get',
        'post',
        'Get',
        'GETT',
        'FOO',
        'G-E-T',
        'PRI',
        'SETUP',
        'GET\u0000',
        'ÄGET',
        'DESCRIBE',
      ]);
      return { label: `method ${JSON.stringify(method)}`, spec: { method }, expected: NODE(400) };
    }
    default: {
      const length = r.pick([100, 1000, 5000, 20000]);
      return { label: `${length}-char method`, spec: { method: 'A'.repeat(length) }, expected: NODE(400, 431) };
    }
  }
};

const authentication: Family = (r, o) => {
  const key = o.key;
  const create = r.chance(0.4);
  const validBody = validPetBody(r);
  const base = (auth: boolean | string, headers: Array<[string, string]> = []): RequestSpec =>
    create ? post(validBody.text, { auth, headers }) : { target: '/v1/pets', auth, headers };
  const ok: Expected = create ? { app: [201], node: [], pet: validBody.pet } : APP(200);
  switch (r.int(4)) {
    case 0:
    case 1: {
      const auth = r.pick<boolean | string>([
        false,
        'Bearer wrong',
        `Bearer ${key}x`,
        `Bearer ${key.slice(1)}`,
        'Bearer',
        'Bearer ',
        'Basic dGVzdDp0ZXN0',
        `Token ${key}`,
        key,
        `Bearer ${key},Bearer ${key}`,
        `Bearer "${key}"`,
        `Bearer ${'a'.repeat(8000)}`,
        `Bearer\t${key}`,
        `Bearer ${key.toUpperCase()}`,
        '',
        `Bearer ${key} extra`,
        `Bearer=${key}`,
      ]);
      return { label: `bad auth ${JSON.stringify(auth).slice(0, 40)}`, spec: base(auth), expected: APP(401) };
    }
    case 2: {
      const auth = r.pick([`bearer ${key}`, `BEARER ${key}`, `Bearer   ${key}`, `bEaReR ${key}`]);
      return { label: `auth variant ${auth.slice(0, 12)}`, spec: base(auth), expected: ok };
    }
    default: {
      const second = r.pick([`Bearer ${key}`, 'Bearer wrong', '']);
      const name = r.pick(['Authorization', 'authorization', 'AUTHORIZATION']);
      return {
        label: `two Authorization headers (${name}: ${second.slice(0, 12)})`,
        spec: base(true, [[name, second]]),
        expected: APP(400),
      };
    }
  }
};

const contentTypes: Family = (r, o) => {
  const { text, pet } = validPetBody(r);
  switch (r.int(6)) {
    case 0:
    case 1: {
      const type = r.pick([
        'text/plain',
        'application/jsonx',
        'application/json-patch+json',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json, text/plain',
        'json',
        '',
        'application/*',
        '*/*',
        'text/json',
        'application/problem+json',
      ]);
      return {
        label: `Content-Type ${JSON.stringify(type)}`,
        spec: post(text, { contentType: type }),
        expected: APP(415),
      };
    }
    case 2:
      return { label: 'no Content-Type', spec: { method: 'POST', target: '/v1/pets', body: text }, expected: APP(415) };
    case 3: {
      const second = r.pick([JSON_TYPE, 'text/plain']);
      return {
        label: `two Content-Type headers (+${second})`,
        spec: post(text, { headers: [['Content-Type', second]] }),
        expected: APP(400),
      };
    }
    case 4: {
      const pad = ' '.repeat(o.bodyLimit + r.range(1, 4096));
      return { label: 'body over the limit', spec: post(text + pad, { chunked: r.chance(0.3) }), expected: APP(413) };
    }
    default: {
      if (r.chance(0.5)) return { label: 'empty body', spec: post('', { chunked: false }), expected: APP(400) };
      return {
        label: 'body of whitespace up to the limit',
        spec: post(text + ' '.repeat(o.bodyLimit - Buffer.byteLength(text))),
        expected: { app: [201], node: [], pet },
      };
    }
  }
};

const httpSyntax: Family = (r, o) => {
  const k = `Authorization: Bearer ${o.key}\r\n`;
  const head = (text: string): RequestSpec => ({ rawHead: Buffer.from(text, 'latin1') });
  const cases: ReadonlyArray<[string, RequestSpec]> = [
    ['header name with a space', head(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nX Bad: v\r\n${k}\r\n`)],
    ['header name with a paren', head(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nX(Bad): v\r\n${k}\r\n`)],
    ['header without a colon', head(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nNoColon\r\n${k}\r\n`)],
    ['empty header name', head(`GET /v1/pets HTTP/1.1\r\nHost: a\r\n: v\r\n${k}\r\n`)],
    ['space before the colon', head(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nX-Bad : v\r\n${k}\r\n`)],
    ['NUL in a header value', head(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nX-Bad: a\u0000b\r\n${k}\r\n`)],
    ['bare CR in a header value', head(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nX-Bad: a\rb\r\n${k}\r\n`)],
    ['bare LF line endings', head(`GET /v1/pets HTTP/1.1\nHost: a\n${k.replace('\r', '')}\n`)],
    ['obs-fold continuation', head(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nX-A: a\r\n folded\r\n${k}\r\n`)],
    [
      'Content-Length and Transfer-Encoding',
      head(
        `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${k}Content-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      ),
    ],
    [
      'two different Content-Lengths',
      head(
        `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${k}Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
      ),
    ],
    [
      'Content-Length abc',
      head(`POST /v1/pets HTTP/1.1\r\nHost: a\r\n${k}Content-Type: application/json\r\nContent-Length: abc\r\n\r\n{}`),
    ],
    [
      'Content-Length -1',
      head(`POST /v1/pets HTTP/1.1\r\nHost: a\r\n${k}Content-Type: application/json\r\nContent-Length: -1\r\n\r\n{}`),
    ],
    [
      'Content-Length 1e2',
      head(`POST /v1/pets HTTP/1.1\r\nHost: a\r\n${k}Content-Type: application/json\r\nContent-Length: 1e2\r\n\r\n{}`),
    ],
    [
      'Transfer-Encoding gzip',
      head(
        `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${k}Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n{}`,
      ),
    ],
    [
      'bad chunk size',
      head(
        `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${k}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`,
      ),
    ],
    [
      'bad chunk size after a 415',
      head(
        `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${k}Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`,
      ),
    ],
    [
      'bad chunk size after a 401',
      head(
        `POST /v1/pets HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`,
      ),
    ],
    ['no Host', head(`GET /v1/pets HTTP/1.1\r\n${k}\r\n`)],
    ['HTTP/1.2', head(`GET /v1/pets HTTP/1.2\r\nHost: a\r\n${k}\r\n`)],
    ['tab in the target', head(`GET /v1/pets\t HTTP/1.1\r\nHost: a\r\n${k}\r\n`)],
    ['DEL in the target', head(`GET /v1/pets\u007f HTTP/1.1\r\nHost: a\r\n${k}\r\n`)],
    ['raw non-ASCII in the target', head(`GET /v1/pets/\u00e9 HTTP/1.1\r\nHost: a\r\n${k}\r\n`)],
    ['raw NUL in the target', head(`GET /v1/pets/\u0000 HTTP/1.1\r\nHost: a\r\n${k}\r\n`)],
    ['control byte in Host', head(`GET /v1/pets HTTP/1.1\r\nHost: \u0001\r\n${k}\r\n`)],
  ];
  const [label, spec] = r.pick(cases);
  // A bad chunk is found only once the service has the request: it may have answered already (one
  // answer, never two), or Node's parser answers first.
  const expected =
    label === 'bad chunk size'
      ? { app: [400], node: [400] }
      : label === 'bad chunk size after a 415'
        ? { app: [415], node: [400] }
        : label === 'bad chunk size after a 401'
          ? { app: [401], node: [400] }
          : label === 'HTTP/1.2'
            ? { app: [505], node: [] }
            : NODE(400);
  return { label, spec, expected };
};

const unknownPaths: Family = (r) => {
  const cases: ReadonlyArray<[string, number]> = [
    ['/', 200],
    ['/v2/pets', 404],
    ['/v1', 200],
    ['/v1/', 404],
    ['/v1/pets/', 404],
    ['/v1/pet', 404],
    ['/V1/pets', 404],
    ['/v1/pets/1/2', 404],
    ['//v1/pets', 404],
    ['/v1//pets', 404],
    ['/v1/./pets', 404],
    ['/%2e%2e/v1/pets', 404],
    ['/v1/pets;x', 404],
    ['/admin', 404],
    ['/.env', 404],
    ['/v1/openapi.json/x', 404],
    ['*', 404],
    ['/v1/pets#frag', 404],
    ['/healthz/', 404],
    ['http://evil.example/v1/pets', 200],
    ['http://evil.example/v2/pets', 404],
  ];
  const [target, status] = r.pick(cases);
  const auth = r.chance(0.7);
  // The absolute form (RFC 9112 §3.2.2) may be routed by its path (200) or not at all (404). `/` and
  // `/v1` point to the reference page and the document, which need no key (api.md).
  const open = target === '/' || target === '/v1';
  const statuses = open ? [200] : !auth ? [401] : target.startsWith('http:') ? [200, 404] : [status];
  return { label: `${auth ? '' : 'no key, '}path ${target}`, spec: { target, auth }, expected: APP(...statuses) };
};

const FAMILIES: ReadonlyArray<[string, number, Family]> = [
  ['valid-create', 14, validCreate],
  ['valid-read', 6, validRead],
  ['broken-json', 12, brokenJson],
  ['deep-nesting', 4, deepNesting],
  ['numbers', 6, numbers],
  ['surrogates', 6, surrogates],
  ['nul-bytes', 4, nulBytes],
  ['duplicate-keys', 4, duplicateKeys],
  ['wrong-types', 8, wrongTypes],
  ['non-object', 3, nonObject],
  ['prototype-keys', 6, prototypeKeys],
  ['bad-percent', 10, badPercent],
  ['repeated-query', 4, repeatedQuery],
  ['oversized-headers', 2, oversizedHeaders],
  ['odd-methods', 6, oddMethods],
  ['authentication', 7, authentication],
  ['content-type', 6, contentTypes],
  ['http-syntax', 4, httpSyntax],
  ['unknown-paths', 3, unknownPaths],
];

/** `count` cases drawn from the families by weight, the same for the same seed. */
export function generateCorpus(seed: number, count: number, options: CorpusOptions): FuzzCase[] {
  const r = new Random(seed);
  const total = FAMILIES.reduce((sum, [, weight]) => sum + weight, 0);
  const corpus: FuzzCase[] = [];
  for (let index = 0; index < count; index++) {
    let roll = r.int(total);
    let chosen = FAMILIES[0] as (typeof FAMILIES)[number];
    for (const family of FAMILIES) {
      if (roll < family[1]) {
        chosen = family;
        break;
      }
      roll -= family[1];
    }
    const [family, , generate] = chosen;
    const draft = generate(r, options);
    const bytes = buildRequest(draft.spec, options.key, r);
    const method = draft.spec.method;
    corpus.push({
      index,
      family,
      label: draft.label,
      bytes,
      head: method === 'HEAD',
      drain: family === 'http-syntax',
      expected: draft.expected,
    });
  }
  return corpus;
}

// ---------------------------------------------------------------------------------------------
// A raw HTTP/1.1 client: one request at a time on a keep-alive socket, reconnecting when closed.

export interface RawAnswer {
  status: number;
  /** Header names in lower case, every value kept. */
  headers: Record<string, string[]>;
  /** Status line and headers as received (latin1). */
  head: string;
  body: Buffer;
  /** Interim (1xx) statuses received before the final answer. */
  interim: number[];
}

export type Outcome =
  /** `extra`: bytes received after the answer (there should be none: one request, one answer). */
  | { kind: 'answer'; answer: RawAnswer; ms: number; extra: number }
  | { kind: 'dropped'; partial: string; error: string | undefined; ms: number }
  | { kind: 'timeout'; partial: string; ms: number };

interface Parsed {
  answer: RawAnswer;
  used: number;
}

/** Parses one final response out of `buffer`; undefined while incomplete. */
export function parseResponse(buffer: Buffer, ended: boolean, isHead: boolean): Parsed | undefined {
  let offset = 0;
  const interim: number[] = [];
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n', offset, 'latin1');
    if (end === -1) return undefined;
    const head = buffer.subarray(offset, end).toString('latin1');
    const lines = head.split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
    const status = match === null ? 0 : Number(match[1]);
    const headers: Record<string, string[]> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      (headers[name] ??= []).push(line.slice(colon + 1).trim());
    }
    const bodyStart = end + 4;
    if (status >= 100 && status < 200) {
      interim.push(status);
      offset = bodyStart;
      continue;
    }
    if (isHead || status === 204 || status === 304)
      return { answer: { status, headers, head, body: Buffer.alloc(0), interim }, used: bodyStart };
    const length = headers['content-length']?.[0];
    if (length !== undefined) {
      const size = Number(length);
      if (buffer.length < bodyStart + size) return undefined;
      return {
        answer: { status, headers, head, body: buffer.subarray(bodyStart, bodyStart + size), interim },
        used: bodyStart + size,
      };
    }
    if (headers['transfer-encoding']?.[0]?.toLowerCase() === 'chunked') {
      const chunks: Buffer[] = [];
      let pos = bodyStart;
      for (;;) {
        const lineEnd = buffer.indexOf('\r\n', pos, 'latin1');
        if (lineEnd === -1)
          return ended
            ? { answer: { status, headers, head, body: Buffer.concat(chunks), interim }, used: buffer.length }
            : undefined;
        const size = parseInt(buffer.subarray(pos, lineEnd).toString('latin1'), 16);
        if (Number.isNaN(size))
          return { answer: { status, headers, head, body: Buffer.concat(chunks), interim }, used: buffer.length };
        if (size === 0) {
          if (buffer.length < lineEnd + 4)
            return ended
              ? { answer: { status, headers, head, body: Buffer.concat(chunks), interim }, used: buffer.length }
              : undefined;
          return { answer: { status, headers, head, body: Buffer.concat(chunks), interim }, used: lineEnd + 4 };
        }
        if (buffer.length < lineEnd + 2 + size + 2)
          return ended
            ? { answer: { status, headers, head, body: Buffer.concat(chunks), interim }, used: buffer.length }
            : undefined;
        chunks.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        pos = lineEnd + 2 + size + 2;
      }
    }
    // No length: the body runs to the end of the connection.
    if (!ended) return undefined;
    return { answer: { status, headers, head, body: buffer.subarray(bodyStart), interim }, used: buffer.length };
  }
}

export class RawClient {
  readonly #host: string;
  readonly #port: number;
  readonly #localAddress: string | undefined;
  #socket: Socket | undefined;
  /** Connections opened so far (a new one after every close). */
  connections = 0;

  constructor(baseUrl: string, localAddress?: string) {
    const url = new URL(baseUrl);
    this.#host = url.hostname;
    this.#port = Number(url.port);
    this.#localAddress = localAddress;
  }

  /**
   * Sends `bytes` and waits for one final answer, the connection's end, or the timeout. With
   * `drainMs`, it goes on listening after the answer until the server closes (or that long) and
   * counts what else arrives: one request must get exactly one answer.
   */
  exchange(bytes: Buffer, options: { head?: boolean; timeoutMs?: number; drainMs?: number } = {}): Promise<Outcome> {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    let socket = this.#socket;
    if (socket === undefined || socket.destroyed || !socket.writable) {
      socket = connect({
        host: this.#host,
        port: this.#port,
        ...(this.#localAddress === undefined ? {} : { localAddress: this.#localAddress }),
      });
      socket.setNoDelay(true);
      this.connections++;
      this.#socket = socket;
    }
    const s = socket;
    return new Promise<Outcome>((resolve) => {
      let buffer = Buffer.alloc(0);
      let ended = false;
      let error: string | undefined;
      let done = false;
      let answered: { parsed: Parsed; ms: number } | undefined;
      let drainTimer: NodeJS.Timeout | undefined;
      const finish = (outcome: Outcome, keep: boolean): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearTimeout(drainTimer);
        s.off('data', onData);
        s.off('end', onEnd);
        s.off('close', onEnd);
        s.off('error', onError);
        if (!keep) {
          s.destroy();
          if (this.#socket === s) this.#socket = undefined;
        }
        resolve(outcome);
      };
      const complete = (): void => {
        if (answered === undefined) return;
        const { parsed, ms } = answered;
        const extra = buffer.length - parsed.used;
        const closes =
          ended ||
          options.drainMs !== undefined ||
          extra !== 0 ||
          (parsed.answer.headers.connection ?? []).some((v) => v.toLowerCase() === 'close');
        finish({ kind: 'answer', answer: parsed.answer, ms, extra }, !closes);
      };
      const attempt = (): void => {
        if (answered === undefined) {
          const parsed = parseResponse(buffer, ended, options.head === true);
          if (parsed !== undefined) answered = { parsed, ms: elapsed() };
        }
        if (answered !== undefined) {
          if (options.drainMs === undefined || ended) complete();
          else drainTimer ??= setTimeout(complete, options.drainMs);
        } else if (ended) {
          finish({ kind: 'dropped', partial: buffer.toString('latin1').slice(0, 200), error, ms: elapsed() }, false);
        }
      };
      const onData = (chunk: Buffer): void => {
        buffer = Buffer.concat([buffer, chunk]);
        attempt();
      };
      const onEnd = (): void => {
        ended = true;
        attempt();
      };
      const onError = (e: Error): void => {
        error = (e as NodeJS.ErrnoException).code ?? e.message;
        ended = true;
        attempt();
      };
      const timer = setTimeout(
        () => finish({ kind: 'timeout', partial: buffer.toString('latin1').slice(0, 200), ms: elapsed() }, false),
        options.timeoutMs ?? 5000,
      );
      s.on('data', onData);
      s.on('end', onEnd);
      s.on('close', onEnd);
      s.on('error', onError);
      s.write(bytes, (e) => {
        if (e !== null && e !== undefined) onError(e);
      });
    });
  }

  close(): void {
    this.#socket?.destroy();
    this.#socket = undefined;
  }
}

/** Parses pet JSON keeping `categoryId` as its exact digits (JSON.parse would round beyond 2^53). */
export function parseExact(text: string): unknown {
  // Inside a JSON string a quote is escaped, so `"categoryId":` can only match a real key.
  return JSON.parse(text.replace(/"categoryId":(-?\d+)/g, '"categoryId":"$1"'));
}

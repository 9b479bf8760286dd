/**
 * A strict reader of the Prometheus text exposition format 0.0.4, written for the tests from the
 * format's description, not from the server's code: it refuses what Prometheus would refuse or
 * silently misread (a sample before its family's HELP and TYPE, a family split in two, a series
 * twice, an escape other than \\ \" \n, a histogram whose buckets do not add up), and what the
 * format allows but this server never writes (comments other than HELP and TYPE, blank lines,
 * timestamps, untyped families).
 */
import assert from 'node:assert/strict';

export interface Series {
  /** The sample's own name: the family's, or for a histogram the family's plus _bucket, _sum or _count. */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  series: Series[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*';
const HELP_LINE = new RegExp(`^# HELP (${NAME}) (.*)$`);
const TYPE_LINE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram)$`);
const SAMPLE_LINE = new RegExp(`^(${NAME})(\\{.*\\})? (\\S+)$`);
// Go's ParseFloat as Prometheus reads values: decimal, exponent, or one of the specials.
const VALUE = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf|NaN)$/;

export function parseExposition(text: string): Map<string, Family> {
  assert.ok(text.endsWith('\n'), 'the exposition ends with a line feed');
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  let current: Family | undefined;
  let help: { name: string; text: string } | undefined;
  for (const [i, line] of text.slice(0, -1).split('\n').entries()) {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    assert.notEqual(line, '', `${where}: no blank lines`);
    assert.equal(line, line.trimEnd(), `${where}: no trailing space`);
    const helpMatch = HELP_LINE.exec(line);
    if (helpMatch !== null) {
      const name = helpMatch[1] as string;
      assert.ok(!families.has(name), `${where}: family ${name} appears twice`);
      help = { name, text: unescapeHelp(helpMatch[2] as string, where) };
      current = undefined;
      continue;
    }
    const typeMatch = TYPE_LINE.exec(line);
    if (typeMatch !== null) {
      const name = typeMatch[1] as string;
      assert.equal(help?.name, name, `${where}: TYPE right after the HELP of the same family`);
      current = { name, help: (help as { text: string }).text, type: typeMatch[2] as Family['type'], series: [] };
      if (current.type === 'counter') assert.match(name, /_total$/, `${where}: a counter's name ends in _total`);
      families.set(name, current);
      help = undefined;
      continue;
    }
    assert.ok(!line.startsWith('#'), `${where}: the only comments are HELP and TYPE`);
    const sample = SAMPLE_LINE.exec(line);
    assert.ok(sample !== null, `${where}: not a sample line (name, labels, one value, no timestamp)`);
    assert.ok(current !== undefined, `${where}: a sample after its family's HELP and TYPE`);
    const name = sample[1] as string;
    const suffixes = current.type === 'histogram' ? ['_bucket', '_sum', '_count'] : [''];
    assert.ok(
      suffixes.some((s) => name === current?.name + s),
      `${where}: ${name} belongs to family ${current.name} (${current.type})`,
    );
    const labels = parseLabels(sample[2] ?? '', where);
    const rawValue = sample[3] as string;
    assert.match(rawValue, VALUE, `${where}: a value Prometheus parses`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    assert.ok(!seen.has(key), `${where}: the same series twice`);
    seen.add(key);
    current.series.push({ name, labels, value: Number(rawValue.replace(/Inf$/, 'Infinity')) });
  }
  assert.equal(help, undefined, `HELP of ${help?.name} without its TYPE`);
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

function unescapeHelp(text: string, where: string): string {
  return text.replace(/\\(.?)/g, (_, c: string) => {
    assert.ok(c === '\\' || c === 'n', `${where}: HELP escapes only \\\\ and \\n`);
    return c === 'n' ? '\n' : '\\';
  });
}

/** `{a="x",b="y"}`: names valid and distinct, values with only \\ \" \n escaped, no trailing comma. */
function parseLabels(text: string, where: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (text === '') return labels;
  const pair = new RegExp(`(${LABEL})="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"`, 'y');
  let at = 1;
  for (;;) {
    pair.lastIndex = at;
    const match = pair.exec(text);
    assert.ok(match !== null, `${where}: a label pair at ${text.slice(at)}`);
    const name = match[1] as string;
    assert.ok(!name.startsWith('__'), `${where}: label ${name} is reserved`);
    assert.ok(!(name in labels), `${where}: label ${name} twice`);
    labels[name] = (match[2] as string).replace(/\\([\\"n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    at = pair.lastIndex;
    if (text[at] === '}' && at === text.length - 1) return labels;
    assert.equal(text[at], ',', `${where}: labels separated by commas`);
    at++;
  }
}

/** Per series: buckets ascending in `le` ending at +Inf, counts that never fall, `_count` equal to the +Inf bucket, a `_sum`. */
function checkHistogram(family: Family): void {
  const groups = new Map<string, { buckets: Array<[number, number]>; sum?: number; count?: number }>();
  for (const s of family.series) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const group = groups.get(key) ?? { buckets: [] };
    groups.set(key, group);
    if (s.name.endsWith('_bucket')) {
      assert.ok(
        le !== undefined && (le === '+Inf' || /^[0-9.e+-]+$/.test(le)),
        `${family.name} ${key}: a bucket has an le`,
      );
      group.buckets.push([le === '+Inf' ? Infinity : Number(le), s.value]);
    } else {
      assert.equal(le, undefined, `${s.name} has no le`);
      if (s.name.endsWith('_sum')) group.sum = s.value;
      else group.count = s.value;
    }
  }
  for (const [key, group] of groups) {
    const what = `${family.name} ${key}`;
    assert.ok(group.buckets.length >= 2, `${what}: buckets`);
    for (let i = 1; i < group.buckets.length; i++) {
      const [le, count] = group.buckets[i] as [number, number];
      const [previousLe, previousCount] = group.buckets[i - 1] as [number, number];
      assert.ok(le > previousLe, `${what}: le ascending`);
      assert.ok(count >= previousCount, `${what}: cumulative counts never fall`);
    }
    assert.equal(group.buckets.at(-1)?.[0], Infinity, `${what}: the last bucket is +Inf`);
    assert.equal(group.count, group.buckets.at(-1)?.[1], `${what}: _count equals the +Inf bucket`);
    assert.equal(typeof group.sum, 'number', `${what}: _sum`);
  }
}

/** The value of the one series of `name` whose labels include `labels`; fails if there is none or several. */
export function metricValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name.replace(/_(bucket|sum|count)$/, '')) ?? families.get(name);
  assert.ok(family !== undefined, `family ${name} is exposed`);
  const found = family.series.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  assert.equal(found.length, 1, `one series ${name}${JSON.stringify(labels)}, found ${found.length}`);
  return (found[0] as Series).value;
}

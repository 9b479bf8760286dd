/**
 * The metric primitives and their text: histogram buckets at their bounds, counters, escaping, and
 * a registry's exposition read back by the strict parser the black-box tests use.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CollectedMetric, single } from '#dist/lib/metrics/collected.js';
import { Counter } from '#dist/lib/metrics/counter.js';
import { formatValue } from '#dist/lib/metrics/exposition.js';
import { Histogram } from '#dist/lib/metrics/histogram.js';
import { MetricsRegistry } from '#dist/lib/metrics/registry.js';
import { parseExposition, metricValue } from './exposition-parser.js';

const bucket = (text: string, le: string): number => metricValue(parseExposition(text), 'h_seconds_bucket', { le });

test("a histogram counts a value equal to a bound in that bound's bucket, and a value just above it in the next", async () => {
  const registry = new MetricsRegistry();
  const h = registry.add(new Histogram('h_seconds', 'h', [], [0.001, 0.01, 0.1])).labels();
  for (const v of [0, 0.001, 0.001]) h.observe(v); // at or below the first bound
  h.observe(0.0010000000000000002); // the next double above 0.001
  h.observe(0.01);
  h.observe(0.1);
  h.observe(0.10000000000000002);
  h.observe(1e9);
  const text = await registry.expose();
  assert.equal(bucket(text, '0.001'), 3);
  assert.equal(bucket(text, '0.01'), 5);
  assert.equal(bucket(text, '0.1'), 6);
  assert.equal(bucket(text, '+Inf'), 8);
  const families = parseExposition(text);
  assert.equal(metricValue(families, 'h_seconds_count'), 8);
  assert.equal(
    metricValue(families, 'h_seconds_sum'),
    0 + 0.001 + 0.001 + 0.0010000000000000002 + 0.01 + 0.1 + 0.10000000000000002 + 1e9,
  );
});

test('a histogram series starts empty, NaN is no observation, and each label set has its own buckets', async () => {
  const registry = new MetricsRegistry();
  const family = registry.add(new Histogram('h_seconds', 'h', ['route'], [1, 2]));
  const a = family.labels('/a');
  family.labels('/b');
  a.observe(1.5);
  a.observe(Number.NaN);
  assert.equal(family.labels('/a'), a, 'the same series for the same label values');
  const families = parseExposition(await registry.expose());
  assert.equal(metricValue(families, 'h_seconds_bucket', { route: '/a', le: '2' }), 1);
  assert.equal(metricValue(families, 'h_seconds_bucket', { route: '/a', le: '1' }), 0);
  assert.equal(metricValue(families, 'h_seconds_sum', { route: '/a' }), 1.5);
  assert.equal(metricValue(families, 'h_seconds_count', { route: '/b' }), 0);
});

test('bucket bounds must be finite and ascending; le is no label of a histogram; a counter is named _total and only goes up', () => {
  for (const bounds of [[], [1, 1], [2, 1], [1, Infinity], [Number.NaN]]) {
    assert.throws(() => new Histogram('h', 'h', [], bounds), TypeError, JSON.stringify(bounds));
  }
  assert.throws(() => new Histogram('h', 'h', ['le'], [1]), TypeError);
  assert.throws(() => new Counter('requests', 'r'), TypeError);
  assert.throws(() => new Counter('bad-name_total', 'r'), TypeError);
  assert.throws(() => new Counter('r_total', 'r', ['__reserved']), TypeError);
  assert.throws(() => new Counter('r_total', 'r', ['a', 'a']), TypeError);
  const series = new Counter('r_total', 'r', ['a']).labels('x');
  assert.throws(() => series.inc(-1), RangeError);
  assert.throws(() => series.inc(Number.NaN), RangeError);
  assert.throws(() => new Counter('r_total', 'r', ['a']).labels(), TypeError, 'one value per label name');
});

test('label values and help text are escaped as the format says, and read back the same', async () => {
  const registry = new MetricsRegistry();
  const hard = 'back\\slash "quoted"\nnew line {},=';
  registry
    .add(new Counter('c_total', `help with \\ and\nline`, ['v']))
    .labels(hard)
    .inc(2);
  const text = await registry.expose();
  assert.match(text, /^# HELP c_total help with \\\\ and\\nline$/m);
  assert.match(text, /^c_total\{v="back\\\\slash \\"quoted\\"\\nnew line \{\},="\} 2$/m);
  const families = parseExposition(text);
  assert.equal(families.get('c_total')?.help, 'help with \\ and\nline');
  assert.equal(metricValue(families, 'c_total', { v: hard }), 2);
});

test('values are written as Prometheus reads them', () => {
  assert.equal(formatValue(Infinity), '+Inf');
  assert.equal(formatValue(-Infinity), '-Inf');
  assert.equal(formatValue(Number.NaN), 'NaN');
  assert.equal(formatValue(3), '3');
  assert.equal(formatValue(0.00005), '0.00005');
  assert.equal(formatValue(1e21), '1e+21');
});

test('a registry writes its families in order, each once, reading collected ones when scraped; a second family of a name is refused', async () => {
  const registry = new MetricsRegistry();
  let now = 1;
  registry.add(new CollectedMetric('gauge', 'g', 'a gauge', [], () => single(now)));
  registry.add(new CollectedMetric('gauge', 'empty', 'no samples now', ['x'], async () => []));
  registry.add(new Counter('c_total', 'a counter')).labels().inc();
  assert.throws(() => registry.add(new Counter('c_total', 'again')), TypeError);
  now = 7;
  const text = await registry.expose();
  assert.equal(
    text,
    '# HELP g a gauge\n# TYPE g gauge\ng 7\n# HELP empty no samples now\n# TYPE empty gauge\n# HELP c_total a counter\n# TYPE c_total counter\nc_total 1\n',
  );
  assert.deepEqual([...parseExposition(text).keys()], ['g', 'empty', 'c_total']);
});

test('the strict parser refuses what Prometheus would refuse or misread', () => {
  const bad = [
    'x 1', // no trailing newline
    'x 1\n', // no HELP and TYPE
    '# HELP x h\n# TYPE x gauge\nx 1\n\n', // blank line
    '# HELP x h\n# TYPE x gauge\nx 1\nx 2\n', // a series twice
    '# HELP x h\n# TYPE x gauge\nx{a="\\t"} 1\n', // an escape the format does not have
    '# HELP x h\n# TYPE x gauge\nx{a="1",a="2"} 1\n',
    '# HELP x h\n# TYPE x gauge\nx 1 1700000000\n', // a timestamp
    '# HELP x h\n# TYPE x gauge\nx one\n',
    '# HELP x h\n# TYPE x counter\nx 1\n', // counter without _total
    '# HELP x h\n# TYPE x gauge\n# HELP y h\n# TYPE y gauge\ny 1\nx 1\n', // a sample after another family began
    '# HELP h h\n# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', // counts fall
    '# HELP h h\n# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n', // _count is not +Inf
    '# HELP h h\n# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', // no +Inf bucket
  ];
  for (const text of bad) assert.throws(() => parseExposition(text), assert.AssertionError, JSON.stringify(text));
});

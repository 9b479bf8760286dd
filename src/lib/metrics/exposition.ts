/**
 * The Prometheus text exposition format, version 0.0.4: what a metric family is to the registry, and
 * how names, label values and numbers are written. Nothing here depends on what is measured.
 */

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type MetricType = 'counter' | 'gauge' | 'histogram';

/** One family: its name, help and type, and its sample lines (each ending in a newline) when scraped. */
export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  samples(): string | Promise<string>;
}

/** A sample read at scrape time: its label values, in the family's label order, and its value. */
export type Sample = readonly [labelValues: readonly string[], value: number];

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A TypeError unless `name` is a metric name and `labelNames` are distinct label names, none reserved. */
export function checkNames(name: string, labelNames: readonly string[], reserved: readonly string[] = []): void {
  if (!METRIC_NAME.test(name)) throw new TypeError(`${JSON.stringify(name)} is not a metric name`);
  for (const label of labelNames) {
    // Names beginning with __ are Prometheus's own.
    if (!LABEL_NAME.test(label) || label.startsWith('__') || reserved.includes(label)) {
      throw new TypeError(`${JSON.stringify(label)} cannot be a label name of ${name}`);
    }
  }
  if (new Set(labelNames).size !== labelNames.length) throw new TypeError(`${name} names a label twice`);
}

/** `{a="x",b="y"}`, or '' for no labels; a value's backslash, double quote and line feed are escaped. */
export function labelText(names: readonly string[], values: readonly string[]): string {
  if (values.length !== names.length)
    throw new TypeError(`${names.length} label values expected (${names.join(', ')}), got ${values.length}`);
  if (names.length === 0) return '';
  return `{${names.map((name, i) => `${name}="${escapeLabelValue(values[i] as string)}"`).join(',')}}`;
}

function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** HELP text escapes only backslash and line feed. */
export function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\'));
}

/** A value as Go's ParseFloat reads it back: integers without a fraction, `+Inf`, `-Inf`, `NaN`. */
export function formatValue(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

/** The family's sample lines for samples read at scrape time. */
export function sampleLines(name: string, labelNames: readonly string[], samples: readonly Sample[]): string {
  let text = '';
  for (const [values, value] of samples) text += `${name}${labelText(labelNames, values)} ${formatValue(value)}\n`;
  return text;
}

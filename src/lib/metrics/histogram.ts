import { checkNames, formatValue, labelText, type MetricFamily } from './exposition.js';

/**
 * One series of a histogram, bound once to its label values. Counts are kept per bucket, not
 * cumulatively, in a typed array (exact to 2^53); the exposition adds them up.
 */
export class HistogramSeries {
  /**
   * Observations per bucket: `counts[i]` those above bound i - 1 and at most bound i; the last, those above every
   * bound.
   */
  readonly counts: Float64Array;
  sum = 0;

  constructor(
    readonly labels: readonly string[],
    readonly bounds: Float64Array,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (Number.isNaN(value)) return; // NaN is no observation, and would poison the sum for good
    const bounds = this.bounds;
    // Bucket `le` holds what is at most its bound. Most observations are small: the scan ends early.
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
  }
}

/** A histogram family with fixed bucket bounds, the same for each of its series. */
export class Histogram implements MetricFamily {
  readonly type = 'histogram';
  readonly #bounds: Float64Array;
  readonly #series = new Map<string, HistogramSeries>();

  /** `bounds`: the buckets' upper bounds, finite and ascending; the `+Inf` bucket is added. */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    bounds: readonly number[],
  ) {
    checkNames(name, labelNames, ['le']);
    if (
      bounds.length === 0 ||
      bounds.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= (bounds[i - 1] as number)))
    ) {
      throw new TypeError(`the bucket bounds of ${name} must be finite and ascending: ${bounds.join(', ')}`);
    }
    this.#bounds = Float64Array.from(bounds);
  }

  /** The series of these label values (made empty the first time). */
  labels(...values: string[]): HistogramSeries {
    const key = labelText(this.labelNames, values);
    let series = this.#series.get(key);
    if (series === undefined) this.#series.set(key, (series = new HistogramSeries(values, this.#bounds)));
    return series;
  }

  samples(): string {
    const names = [...this.labelNames, 'le'];
    const les = [...this.#bounds].map(formatValue).concat('+Inf');
    let text = '';
    for (const series of this.#series.values()) {
      const labels = labelText(this.labelNames, series.labels);
      let cumulative = 0;
      for (const [i, le] of les.entries()) {
        cumulative += series.counts[i] as number;
        text += `${this.name}_bucket${labelText(names, [...series.labels, le])} ${cumulative}\n`;
      }
      text += `${this.name}_sum${labels} ${formatValue(series.sum)}\n${this.name}_count${labels} ${cumulative}\n`;
    }
    return text;
  }
}

import { checkNames, formatValue, labelText, type MetricFamily } from './exposition.js';

/** One series of a counter, bound once to its label values and kept by whoever counts. */
export class CounterSeries {
  value = 0;

  constructor(readonly labels: string) {}

  inc(by = 1): void {
    if (!(by >= 0)) throw new RangeError(`a counter only goes up; cannot add ${by}`);
    this.value += by;
  }
}

/**
 * A counter family kept in memory. Each series is made on the first `labels(...)` for its values and
 * then held by the caller, so that counting is an addition to a plain number.
 */
export class Counter implements MetricFamily {
  readonly type = 'counter';
  readonly #series = new Map<string, CounterSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[] = [],
  ) {
    checkNames(name, labelNames);
    if (!name.endsWith('_total')) throw new TypeError(`a counter's name ends in _total: ${name}`);
  }

  /** The series of these label values (made at 0 the first time, so that it is exposed before its first count). */
  labels(...values: string[]): CounterSeries {
    const labels = labelText(this.labelNames, values);
    let series = this.#series.get(labels);
    if (series === undefined) this.#series.set(labels, (series = new CounterSeries(labels)));
    return series;
  }

  samples(): string {
    let text = '';
    for (const series of this.#series.values()) text += `${this.name}${series.labels} ${formatValue(series.value)}\n`;
    return text;
  }
}

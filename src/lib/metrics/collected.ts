import { checkNames, sampleLines, type MetricFamily, type MetricType, type Sample } from './exposition.js';

/**
 * A family whose samples are read when it is scraped, never kept up to date on the way: gauges of
 * state (pets stored, connections open) and counters something else keeps (the CPU time the kernel
 * counts). `read` gives the samples of this moment; none is a family without samples.
 */
export class CollectedMetric implements MetricFamily {
  constructor(
    readonly type: Exclude<MetricType, 'histogram'>,
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly read: () => readonly Sample[] | Promise<readonly Sample[]>,
  ) {
    checkNames(name, labelNames);
    if (type === 'counter' && !name.endsWith('_total')) throw new TypeError(`a counter's name ends in _total: ${name}`);
  }

  samples(): string | Promise<string> {
    const samples = this.read();
    return samples instanceof Promise
      ? samples.then((s) => sampleLines(this.name, this.labelNames, s))
      : sampleLines(this.name, this.labelNames, samples);
  }
}

/** The one sample of a family without labels. */
export const single = (value: number): readonly Sample[] => [[[], value]];

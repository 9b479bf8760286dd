import { escapeHelp, type MetricFamily } from './exposition.js';

/**
 * The families of one service, in the order they were added, and their exposition. A registry
 * belongs to one service instance, never to the module: two services in one process count apart.
 */
export class MetricsRegistry {
  readonly #families: MetricFamily[] = [];

  /** Adds `family`; a second family of the same name is refused (the exposition would be invalid). */
  add<T extends MetricFamily>(family: T): T {
    if (this.#families.some((f) => f.name === family.name))
      throw new TypeError(`a metric named ${family.name} is already registered`);
    this.#families.push(family);
    return family;
  }

  /**
   * Every family in the text format 0.0.4, its samples read now. Contract: each family's `samples()`
   * is called in the order added, all of them before any is awaited, so a family may rely on those
   * before it having been read in the same scrape.
   */
  async expose(): Promise<string> {
    const samples = await Promise.all(this.#families.map((f) => f.samples()));
    return this.#families
      .map((f, i) => `# HELP ${f.name} ${escapeHelp(f.help)}\n# TYPE ${f.name} ${f.type}\n${samples[i] as string}`)
      .join('');
  }
}

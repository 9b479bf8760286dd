import type { Logger } from '../lib/logger.js';
import { errorCode, withoutStack } from '../lib/system-error.js';
import type { PetStore } from '../store/store.js';
import { CommitTimes } from './commit-times.js';
import { Pace } from './pace.js';
import type { AttemptResult } from './sender.js';
import { type DeliveryOptions, SubscriptionDelivery } from './subscription-delivery.js';
import { type Subscription, SubscriptionFileError } from './subscription-file.js';
import type { SubscriptionSource } from './subscription-source.js';

// How often the subscriptions are read again (`webhooks add`, `rotate-secret`, `replay`; the leases of a database).
const RELOAD_INTERVAL_MS = 1000;

/** What metrics read of one subscription, at scrape time. */
export interface SubscriptionStats {
  id: string;
  counts: Readonly<Record<AttemptResult, number>>;
  failing: boolean;
  /** Age of the oldest pet not yet delivered (or passed over); 0 when it is up to date. */
  lagSeconds: number;
}

/**
 * Every subscription of a source (webhooks.json, or the database's table), delivered from the store's
 * own order: each keeps a cursor (the last pet id it is done with) and reads the pets after it. New
 * commits wake them; the source is read again every second, so that commands take effect on a running server.
 */
export class Deliveries {
  readonly #subscriptions = new Map<string, SubscriptionDelivery>();
  readonly #pace = new Pace();
  /** What the source last said: those not delivered yet are started at each look, once their start is stored. */
  #listed: Subscription[] = [];
  /** Those whose start could not be stored, said once each until it is. */
  readonly #unstored = new Set<string>();
  #stopped = false;
  #reloadFailing = false;
  #timer: NodeJS.Timeout | undefined;
  #unwatch: (() => void) | undefined;

  private constructor(
    private readonly store: PetStore,
    private readonly source: SubscriptionSource,
    private readonly times: CommitTimes,
    private readonly options: DeliveryOptions,
    private readonly logger: Logger,
  ) {}

  /** Reads the subscriptions (a source that cannot be read refuses the start) and starts delivering. */
  static async start(
    store: PetStore,
    source: SubscriptionSource,
    options: DeliveryOptions,
    logger: Logger,
  ): Promise<Deliveries> {
    const deliveries = new Deliveries(store, source, new CommitTimes(await lastId(store)), options, logger);
    deliveries.#unwatch = store.watchCommits?.((id) => deliveries.#committed(id));
    await deliveries.#reload(true);
    deliveries.#schedule();
    return deliveries;
  }

  stats(): SubscriptionStats[] {
    return [...this.#subscriptions].map(([id, delivery]) => ({
      id,
      counts: delivery.counts,
      failing: delivery.failing,
      lagSeconds: this.times.lagSeconds(delivery.cursor),
    }));
  }

  /** Ends every attempt in flight and leaves the cursors stored. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#unwatch?.();
    this.#pace.stop();
    await Promise.all([...this.#subscriptions.values()].map((d) => d.stop()));
    await this.source.close();
  }

  #committed(id: number): void {
    this.times.committed(id);
    for (const delivery of this.#subscriptions.values()) delivery.notify();
  }

  #schedule(): void {
    // Unref'd: delivery alone never keeps the process alive.
    this.#timer = setTimeout(() => {
      this.#tick().catch((error: unknown) => {
        this.logger.error('webhook delivery could not check for changes; trying again in a second', error);
        if (this.#timer !== undefined) this.#schedule();
      });
    }, RELOAD_INTERVAL_MS).unref();
  }

  async #tick(): Promise<void> {
    await this.#reload(false);
    // A store that cannot tell of its commits is asked every time the file is checked.
    if (this.store.watchCommits === undefined) this.#committed(await lastId(this.store));
    this.times.prune(Math.min(...[...this.#subscriptions.values()].map((d) => d.cursor)));
    if (this.#timer !== undefined) this.#schedule();
  }

  async #reload(first: boolean): Promise<void> {
    let subscriptions: Subscription[] | undefined;
    try {
      subscriptions = await this.source.read();
    } catch (error) {
      if (first) throw error;
      if (!this.#reloadFailing)
        this.logger.error(
          'cannot read the webhook subscriptions again; the previous ones stay in force',
          // A file that says what is wrong with it needs no stack: the operator fixes the file, not the code.
          error instanceof SubscriptionFileError ? error.message : withoutStack(error),
        );
      this.#reloadFailing = true;
      return;
    }
    this.#reloadFailing = false;
    if (subscriptions !== undefined) this.#update(subscriptions);
    for (const subscription of this.#listed) {
      if (this.#stopped) return;
      if (!this.#subscriptions.has(subscription.id)) await this.#add(subscription);
    }
  }

  /** Takes the source's new list: changes reach those delivered, and those no longer listed stop. */
  #update(subscriptions: Subscription[]): void {
    this.#listed = subscriptions;
    const seen = new Set(subscriptions.map((s) => s.id));
    for (const subscription of subscriptions) this.#subscriptions.get(subscription.id)?.update(subscription);
    for (const id of this.#unstored) if (!seen.has(id)) this.#unstored.delete(id);
    for (const [id, delivery] of this.#subscriptions) {
      if (seen.has(id)) continue;
      this.#subscriptions.delete(id);
      this.logger.info('webhook subscription stopped', { subscription: id, after: delivery.cursor });
      void delivery.stop().then(() => this.source.cursors.delete(id));
    }
  }

  async #add(subscription: Subscription): Promise<void> {
    const { id } = subscription;
    let cursor = this.source.cursors.get(id)?.last;
    if (cursor === undefined) {
      // New to this store: it starts after the pets there now (it is for new pets; replay reaches back), and
      // is neither delivered nor said to be before that start is stored, so a crash after cannot move it on.
      cursor = this.times.lastId;
      if (!(await this.#start(id, cursor)) || this.#stopped) return;
    }
    const events = {
      failing: (fields: Record<string, string | number | boolean | undefined>) =>
        this.logger.error('webhook subscription failing; retrying', undefined, fields),
      recovered: (fields: Record<string, string | number | boolean | undefined>) =>
        this.logger.info('webhook subscription recovered', fields),
      stopped: (error: unknown, fields: Record<string, string | number | boolean | undefined>) =>
        this.logger.error(
          'webhook delivery stopped on an unexpected error; restart the server to resume',
          error,
          fields,
        ),
    };
    this.#subscriptions.set(
      subscription.id,
      new SubscriptionDelivery(subscription, cursor, this.store, this.source.cursors, this.options, events, this.#pace),
    );
    this.logger.info('webhook subscription delivering', { subscription: subscription.id, after: cursor });
  }

  /** Stores where `id` starts; whether it is stored and delivered here. A system error is said once, then retried. */
  async #start(id: string, last: number): Promise<boolean> {
    try {
      const held = await this.source.cursors.start(id, { last });
      this.#unstored.delete(id);
      return held;
    } catch (error) {
      if (errorCode(error) === undefined) throw error;
      if (!this.#unstored.has(id))
        this.logger.error(
          'cannot store where a new webhook subscription starts; it is not delivered until that is stored ' +
            '(tried every second)',
          withoutStack(error),
          { subscription: id },
        );
      this.#unstored.add(id);
      return false;
    }
  }
}

/** The highest pet id in `store`, found with list alone: doubling, then halving, about 2·log2(id) reads of one pet. */
export async function lastId(store: PetStore): Promise<number> {
  const any = async (after: number): Promise<number | undefined> => (await store.list({ after, limit: 1 })).pets[0]?.id;
  let low = await any(0);
  if (low === undefined) return 0;
  let high = low * 2 + 1;
  while ((await any(high)) !== undefined) {
    low = high;
    high *= 2;
  }
  // A pet after `low`, none after `high`.
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    const found = await any(middle);
    if (found === undefined) high = middle;
    else low = found;
  }
  return (await any(low)) ?? low;
}

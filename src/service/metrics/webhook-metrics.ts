import { CollectedMetric } from '../../lib/metrics/collected.js';
import type { MetricsRegistry } from '../../lib/metrics/registry.js';
import type { Webhooks } from '../webhooks.js';

/** The webhook families, one series per subscription, read at scrape time (none before delivery starts). */
export function addWebhookMetrics(registry: MetricsRegistry, webhooks: Webhooks): void {
  registry.add(
    new CollectedMetric(
      'counter',
      'petstore_webhook_deliveries_total',
      'Webhook delivery attempts by subscription and result (delivered, failed, timeout, refused)',
      ['subscription', 'result'],
      () =>
        webhooks
          .stats()
          .flatMap(({ id, counts }) => Object.entries(counts).map(([result, n]) => [[id, result], n] as const)),
    ),
  );
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_webhook_lag_seconds',
      'Age of the oldest pet a webhook subscription has not delivered; 0 when up to date',
      ['subscription'],
      () => webhooks.stats().map(({ id, lagSeconds }) => [[id], lagSeconds]),
    ),
  );
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_webhook_failing',
      '1 while a webhook subscription is failing (its retries exhausted the bound), else 0',
      ['subscription'],
      () => webhooks.stats().map(({ id, failing }) => [[id], failing ? 1 : 0]),
    ),
  );
}

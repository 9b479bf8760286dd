import { CollectedMetric, single } from '../../lib/metrics/collected.js';
import type { MetricsRegistry } from '../../lib/metrics/registry.js';

/** What the families read: the served certificate's expiry (Unix seconds), the reloads' outcomes. */
export interface CertificateState {
  readonly expiry: number;
  readonly counts: { readonly loaded: number; readonly refused: number };
}

/** The TLS families: when the served certificate expires, and the pairs loaded and refused by reloads. */
export function addCertificateMetrics(registry: MetricsRegistry, certificates: CertificateState): void {
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_tls_certificate_expiry_timestamp_seconds',
      'When the certificate that new connections get expires (its notAfter, Unix time)',
      [],
      () => single(certificates.expiry),
    ),
  );
  registry.add(
    new CollectedMetric(
      'counter',
      'petstore_tls_certificate_reloads_total',
      'TLS pairs read again (SIGHUP or a change of the files), by result: loaded, or refused and the previous pair ' +
        'kept',
      ['result'],
      () => [
        [['loaded'], certificates.counts.loaded],
        [['refused'], certificates.counts.refused],
      ],
    ),
  );
}

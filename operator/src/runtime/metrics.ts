// The operator's Prometheus metrics: reconciles (count, duration, errors), queue depth, API requests by verb,
// watch restarts, cache sizes and leadership. One registry per operator instance (tests run several in a process).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { createMetricsRegistry } from '@boxyard/kit/metrics/metrics.ts';
import { WRITE_VERBS, type RequestRecord } from '../kube/client.ts';

export type ReconcileOutcome = 'success' | 'requeue' | 'stalled' | 'error' | 'paused';

export class OperatorMetrics {
  readonly registry: Registry;
  readonly reconciles: Counter<'controller' | 'result'>;
  readonly reconcileErrors: Counter<'controller'>;
  readonly reconcileDuration: Histogram<'controller'>;
  readonly queueDepth: Gauge<'controller'>;
  readonly apiRequests: Counter<'verb' | 'resource' | 'code'>;
  readonly watchRestarts: Counter<'resource' | 'reason'>;
  readonly cachedObjects: Gauge<'resource'>;
  readonly leader: Gauge;
  /** Writes counted in-process too, so tests and benches can read them without scraping. */
  writes = 0;
  /** Sizes of the informer caches, read at scrape time. */
  cacheSizes: () => Record<string, number> = () => ({});

  constructor(registry: Registry = createMetricsRegistry({ app: 'boxyard-operator' })) {
    this.registry = registry;
    const registers = [registry];
    this.reconciles = new Counter({ name: 'boxyard_operator_reconcile_total', help: 'Reconciles by controller and result.', labelNames: ['controller', 'result'], registers });
    this.reconcileErrors = new Counter({ name: 'boxyard_operator_reconcile_errors_total', help: 'Reconciles that failed with an error (requeued with backoff).', labelNames: ['controller'], registers });
    this.reconcileDuration = new Histogram({
      name: 'boxyard_operator_reconcile_duration_seconds',
      help: 'Time spent in one reconcile.',
      labelNames: ['controller'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.queueDepth = new Gauge({ name: 'boxyard_operator_queue_depth', help: 'Keys waiting in the work queue.', labelNames: ['controller'], registers });
    this.apiRequests = new Counter({ name: 'boxyard_operator_api_requests_total', help: 'Kubernetes API requests by verb, resource and status code.', labelNames: ['verb', 'resource', 'code'], registers });
    this.watchRestarts = new Counter({ name: 'boxyard_operator_watch_restarts_total', help: 'Watches re-established, by reason (expired = 410 Gone, relisted).', labelNames: ['resource', 'reason'], registers });
    const sizes = () => this.cacheSizes();
    this.cachedObjects = new Gauge({
      name: 'boxyard_operator_cached_objects',
      help: 'Objects held in the informer caches.',
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        for (const [resource, size] of Object.entries(sizes())) this.set({ resource }, size);
      },
    });
    this.leader = new Gauge({ name: 'boxyard_operator_leader', help: '1 while this replica holds the leader lease.', registers });
  }

  recordRequest = (record: RequestRecord): void => {
    this.apiRequests.inc({ verb: record.verb, resource: record.resource, code: String(record.code) });
    if (WRITE_VERBS.has(record.verb) && record.resource !== 'leases' && record.code > 0) this.writes++;
  };
}

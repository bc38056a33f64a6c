// The operator's Prometheus metrics: reconciles (count, duration, errors) and work queues under controller-runtime's
// and client-go's names, API requests by verb, watch restarts, cache sizes and leadership. One registry per operator instance (tests run several in a process).
import { Counter, Gauge, Histogram, type Registry } from '@prometheus-io/client';
import { createMetricsRegistry } from '@boxyard/kit/metrics/metrics.ts';
import { WRITE_VERBS, type RequestRecord } from '@boxyard/kit/kube/client.ts';
import type { WorkQueue } from './queue.ts';

/**
 * Result of one reconcile, as controller-runtime labels it (requeue = retried with backoff, requeue_after = asked
 * to run again later), plus `paused` for resources carrying boxyard.io/paused.
 */
export type ReconcileOutcome = 'success' | 'requeue' | 'requeue_after' | 'error' | 'paused';

const QUEUE_BUCKETS = [1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000];

export class OperatorMetrics {
  readonly registry: Registry;
  // controller-runtime's names, so the dashboards and alerts written for controller-runtime operators work as they are.
  readonly reconciles: Counter<'controller' | 'result'>;
  readonly reconcileErrors: Counter<'controller'>;
  readonly reconcileDuration: Histogram<'controller'>;
  readonly activeWorkers: Gauge<'controller'>;
  readonly maxConcurrentReconciles: Gauge<'controller'>;
  // client-go's workqueue metrics (label `name` is the controller, as controller-runtime sets it).
  readonly queueDepth: Gauge<'name' | 'controller'>;
  readonly queueAdds: Counter<'name' | 'controller'>;
  readonly queueLatency: Histogram<'name' | 'controller'>;
  readonly workDuration: Histogram<'name' | 'controller'>;
  readonly retries: Counter<'name' | 'controller'>;
  readonly apiRequests: Counter<'verb' | 'resource' | 'code'>;
  readonly watchRestarts: Counter<'resource' | 'reason'>;
  readonly cachedObjects: Gauge<'resource'>;
  readonly leader: Gauge;
  /** Writes counted in-process too, so tests and benches can read them without scraping. */
  writes = 0;
  /** Sizes of the informer caches, read at scrape time. */
  cacheSizes: () => Record<string, number> = () => ({});
  /** Seconds each key in process has been running, per controller, read at scrape time. */
  private readonly inFlight = new Map<string, () => number[]>();

  constructor(registry: Registry = createMetricsRegistry({ app: 'boxyard-operator' })) {
    this.registry = registry;
    const registers = [registry];
    this.reconciles = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller, by result.',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller (retried with backoff).',
      labelNames: ['controller'],
      registers,
    });
    this.reconcileDuration = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller.',
      labelNames: ['controller'],
      buckets: [
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8,
        9, 10, 15, 20, 25, 30, 40, 50, 60,
      ],
      registers,
    });
    this.activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller.',
      labelNames: ['controller'],
      registers,
    });
    this.maxConcurrentReconciles = new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller.',
      labelNames: ['controller'],
      registers,
    });
    const queueLabels = ['name', 'controller'] as const;
    this.queueDepth = new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue.', labelNames: queueLabels, registers });
    this.queueAdds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue.', labelNames: queueLabels, registers });
    this.queueLatency = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested.',
      labelNames: queueLabels,
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.workDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames: queueLabels,
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.retries = new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue.', labelNames: queueLabels, registers });
    const inFlight = () => this.inFlight;
    new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration.",
      labelNames: queueLabels,
      registers,
      collect() {
        for (const [name, seconds] of inFlight())
          this.set(
            { name, controller: name },
            seconds().reduce((a, b) => a + b, 0),
          );
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames: queueLabels,
      registers,
      collect() {
        for (const [name, seconds] of inFlight()) this.set({ name, controller: name }, Math.max(0, ...seconds()));
      },
    });
    this.apiRequests = new Counter({
      name: 'boxyard_operator_api_requests_total',
      help: 'Kubernetes API requests by verb, resource and status code.',
      labelNames: ['verb', 'resource', 'code'],
      registers,
    });
    this.watchRestarts = new Counter({
      name: 'boxyard_operator_watch_restarts_total',
      help: 'Watches re-established, by reason (expired = 410 Gone, relisted).',
      labelNames: ['resource', 'reason'],
      registers,
    });
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

  /** One controller's series (at zero from the start, as controller-runtime does) and its queue's metrics. */
  registerController(name: string, queue: WorkQueue): void {
    for (const result of ['success', 'requeue', 'requeue_after', 'error', 'paused'] as const) this.reconciles.inc({ controller: name, result }, 0);
    this.reconcileErrors.inc({ controller: name }, 0);
    const labels = { name, controller: name };
    this.inFlight.set(name, () => queue.inFlightSeconds());
    this.queueDepth.set(labels, 0);
    this.queueAdds.inc(labels, 0);
    this.retries.inc(labels, 0);
    queue.observer = {
      added: () => this.queueAdds.inc(labels),
      depth: (depth) => this.queueDepth.set(labels, depth),
      waited: (seconds) => this.queueLatency.observe(labels, seconds),
      worked: (seconds) => this.workDuration.observe(labels, seconds),
      retried: () => this.retries.inc(labels),
    };
  }

  /** Counts one resource's watch restarts; its series start at zero (timeout, error, expired). */
  watchRestartCounter(resource: string): (reason: string) => void {
    for (const reason of ['timeout', 'error', 'expired']) this.watchRestarts.inc({ resource, reason }, 0);
    return (reason) => this.watchRestarts.inc({ resource, reason });
  }

  recordRequest = (record: RequestRecord): void => {
    this.apiRequests.inc({ verb: record.verb, resource: record.resource, code: String(record.code) });
    if (WRITE_VERBS.has(record.verb) && record.resource !== 'leases' && record.code > 0) this.writes++;
  };
}

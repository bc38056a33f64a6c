// A controller: informer events become keys in a work queue; workers run the reconciler for one key at a time.
// Events on owned children (Deployments, Services, Secrets, ...) map to their controlling owner, other related
// objects (a Secret the resource references) through a mapping function. Reconcilers are level-triggered: they
// read the current state and converge, so a missed, duplicated or reordered event only costs a reconcile.
import { randomUUID } from 'node:crypto';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { keyOf } from '@boxyard/kit/kube/types.ts';
import type { Informer } from './informer.ts';
import type { OperatorMetrics, ReconcileOutcome } from './metrics.ts';
import { RateLimiter, WorkQueue } from './queue.ts';
import { reconcileFields, type Logger } from './logger.ts';
import { traceReconcile } from './tracing.ts';

export const PAUSE_ANNOTATION = 'boxyard.io/paused';

export interface ReconcileResult {
  /** Reconcile again after this delay even without an event (e.g. polling something outside the cluster). */
  requeueAfterMs?: number;
  /** The resource cannot progress (reported in its status): retry with the key's backoff, not as an error. */
  stalled?: boolean;
}

export type Reconciler = (key: string) => Promise<ReconcileResult | void>;

export interface ControllerOptions<T extends KubeObject> {
  name: string;
  primary: Informer<T>;
  reconcile: Reconciler;
  /** Called instead of `reconcile` for a resource carrying `boxyard.io/paused: "true"` (deletions still run). */
  onPaused?: (object: T) => Promise<void>;
  workers?: number;
  metrics?: OperatorMetrics;
  limiter?: RateLimiter;
  /** Failed reconciles are logged here with controller, namespace, name and reconcileID. */
  logger?: Logger;
  log?: (message: string) => void;
}

export const isPaused = (object: KubeObject): boolean => object.metadata.annotations?.[PAUSE_ANNOTATION] === 'true' && !object.metadata.deletionTimestamp;

export class Controller<T extends KubeObject = KubeObject> {
  readonly name: string;
  readonly queue: WorkQueue;
  private readonly options: ControllerOptions<T>;
  private readonly sources: Informer[] = [];
  private workers: Promise<void>[] = [];
  private stopped = false;

  constructor(options: ControllerOptions<T>) {
    this.name = options.name;
    this.options = options;
    this.queue = new WorkQueue(options.limiter ?? new RateLimiter());
    options.metrics?.registerController(options.name, this.queue);
    options.primary.addHandler((_type, object) => this.queue.add(keyOf(object.metadata)));
    this.sources.push(options.primary as unknown as Informer);
  }

  /** Children whose controlling ownerReference names a resource of the primary kind requeue that resource. */
  watchOwned(informer: Informer): void {
    const { kind } = this.options.primary.type;
    informer.addHandler((type, object) => {
      if (type === 'resync') return; // the primary's own resync covers its children
      const owner = object.metadata.ownerReferences?.find(
        (ref) => ref.controller && ref.kind === kind && ref.apiVersion.startsWith(`${this.options.primary.type.group}/`),
      );
      if (owner && object.metadata.namespace) this.queue.add(`${object.metadata.namespace}/${owner.name}`);
    });
    this.sources.push(informer);
  }

  /** Related objects: `map` names the primary keys an event on `object` concerns. */
  watchMapped(informer: Informer, map: (object: KubeObject) => string[]): void {
    informer.addHandler((type, object) => {
      if (type === 'resync') return;
      for (const key of map(object)) this.queue.add(key);
    });
    this.sources.push(informer);
  }

  /** Starts the workers once every informer it reads has listed. */
  async start(): Promise<void> {
    await Promise.all(this.sources.map((informer) => informer.synced));
    if (this.stopped) return;
    const workers = this.options.workers ?? 4;
    this.options.metrics?.maxConcurrentReconciles.set({ controller: this.name }, workers);
    this.options.metrics?.activeWorkers.set({ controller: this.name }, 0);
    this.workers = Array.from({ length: workers }, () => this.work());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.shutdown();
    await Promise.allSettled(this.workers);
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.process(key);
      } finally {
        this.queue.done(key);
      }
    }
  }

  private async process(key: string): Promise<void> {
    const { metrics, name, log, logger } = this.options;
    const reconcileID = randomUUID();
    const timer = metrics?.reconcileDuration.startTimer({ controller: name });
    metrics?.activeWorkers.inc({ controller: name });
    let outcome: ReconcileOutcome = 'success';
    try {
      const [namespace, objectName] = key.split('/') as [string, string];
      const object = this.options.primary.get(namespace, objectName);
      if (object && isPaused(object)) {
        outcome = 'paused';
        await this.options.onPaused?.(object);
        this.queue.forget(key);
        return;
      }
      const result = (await traceReconcile(name, this.options.primary.type.kind, key, async () => this.options.reconcile(key))) ?? {};
      if (this.stopped) return;
      if (result.stalled) {
        outcome = 'requeue';
        this.queue.addRateLimited(key);
      } else {
        this.queue.forget(key);
        if (result.requeueAfterMs !== undefined) {
          outcome = 'requeue_after';
          this.queue.addAfter(key, result.requeueAfterMs);
        }
      }
    } catch (error) {
      outcome = 'error';
      metrics?.reconcileErrors.inc({ controller: name });
      if (this.stopped) return;
      const delay = this.queue.addRateLimited(key);
      const message = (error as Error).message ?? String(error);
      if (logger) logger.error({ ...reconcileFields(name, key, reconcileID), error: message, retryInMs: delay }, 'Reconciler error');
      else log?.(`${name} ${key}: reconcile failed, retrying in ${delay} ms: ${message}`);
    } finally {
      timer?.();
      metrics?.activeWorkers.dec({ controller: name });
      metrics?.reconciles.inc({ controller: name, result: outcome });
    }
  }
}

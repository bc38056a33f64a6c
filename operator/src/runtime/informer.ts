// A shared informer: lists a resource type once, then watches it from the list's resourceVersion, keeping an
// in-memory cache that controllers read instead of the apiserver. Like client-go's reflector it resumes a broken
// watch from the last resourceVersion it saw (bookmarks keep that fresh), relists when the apiserver answers
// 410 Gone (the version was compacted away), reconnects with capped exponential backoff and jitter, and replays
// every cached object to its handlers on a resync period so level-triggered reconcilers catch up on anything missed.
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { KubeApiError, isGone } from '@boxyard/kit/kube/client.ts';
import { apiVersionOf, type ResourceType } from '@boxyard/kit/kube/resources.ts';
import { keyOf, type KubeObject, type KubeStatus, type WatchEvent } from '@boxyard/kit/kube/types.ts';
import { sleep } from './sleep.ts';

export type InformerEventType = 'add' | 'update' | 'delete' | 'resync';
export type InformerHandler<T extends KubeObject> = (type: InformerEventType, object: T, old?: T) => void;

export interface InformerOptions {
  type: ResourceType;
  /** Namespaces to watch; undefined = all namespaces (one cluster-wide watch). */
  namespaces?: string[] | undefined;
  labelSelector?: string;
  /** Cache only metadata (PartialObjectMetadata): for Secrets, whose data the operator must not hold. */
  metadataOnly?: boolean;
  /** Replay every cached object to the handlers this often (0 = never). */
  resyncMs?: number;
  /** Server-side watch timeout range; each watch picks a random value in it so reconnects spread out. */
  watchTimeoutSeconds?: [number, number];
  backoff?: { initialMs: number; maxMs: number };
  onWatchRestart?: (reason: 'expired' | 'error' | 'timeout') => void;
  log?: (message: string) => void;
}

export class Informer<T extends KubeObject = KubeObject> {
  readonly type: ResourceType;
  private readonly client: KubeClient;
  private readonly options: InformerOptions;
  private readonly store = new Map<string, T>();
  private readonly handlers: InformerHandler<T>[] = [];
  private readonly controller = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private resyncTimer: NodeJS.Timeout | undefined;
  private unsynced = 0;
  private syncedResolve!: () => void;
  /** Resolves once every namespace has been listed once. */
  readonly synced: Promise<void>;
  private readonly indexers = new Map<string, (object: T) => string[]>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();

  constructor(client: KubeClient, options: InformerOptions) {
    this.client = client;
    this.type = options.type;
    this.options = options;
    this.synced = new Promise((resolve) => (this.syncedResolve = resolve));
  }

  /** Maintains a secondary index: `byIndex(name, value)` returns the objects `indexer` maps to `value`. */
  addIndex(name: string, indexer: (object: T) => string[]): void {
    this.indexers.set(name, indexer);
    const index = new Map<string, Set<string>>();
    this.indexes.set(name, index);
    for (const [key, object] of this.store) for (const value of indexer(object)) this.indexAdd(index, value, key);
  }

  byIndex(name: string, value: string): T[] {
    const keys = this.indexes.get(name)?.get(value);
    if (!keys) return [];
    return [...keys].map((key) => this.store.get(key)).filter((o): o is T => o !== undefined);
  }

  private indexAdd(index: Map<string, Set<string>>, value: string, key: string): void {
    let keys = index.get(value);
    if (!keys) index.set(value, (keys = new Set()));
    keys.add(key);
  }

  private reindex(key: string, old: T | undefined, next: T | undefined): void {
    for (const [name, indexer] of this.indexers) {
      const index = this.indexes.get(name)!;
      if (old) {
        for (const value of indexer(old)) {
          const keys = index.get(value);
          keys?.delete(key);
          if (keys?.size === 0) index.delete(value);
        }
      }
      if (next) for (const value of indexer(next)) this.indexAdd(index, value, key);
    }
  }

  addHandler(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.store.get(keyOf({ namespace, name }));
  }

  list(): T[] {
    return [...this.store.values()];
  }

  get size(): number {
    return this.store.size;
  }

  hasSynced(): boolean {
    return this.unsynced === 0 && this.loops.length > 0;
  }

  start(): void {
    if (this.loops.length) return;
    const scopes = this.options.namespaces?.length ? this.options.namespaces : [undefined];
    this.unsynced = scopes.length;
    for (const namespace of scopes) this.loops.push(this.run(namespace));
    const resync = this.options.resyncMs ?? 0;
    if (resync > 0) {
      this.resyncTimer = setInterval(() => this.resync(), resync);
      this.resyncTimer.unref();
    }
  }

  async stop(): Promise<void> {
    this.controller.abort();
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.syncedResolve();
    await Promise.allSettled(this.loops);
  }

  /** Replays every cached object as a 'resync' event. */
  resync(): void {
    for (const object of this.store.values()) this.emit('resync', object);
  }

  private emit(type: InformerEventType, object: T, old?: T): void {
    for (const handler of this.handlers) {
      try {
        handler(type, object, old);
      } catch (error) {
        this.options.log?.(`informer ${this.type.plural}: handler failed: ${String(error)}`);
      }
    }
  }

  private inScope(object: T, namespace: string | undefined): boolean {
    return namespace === undefined || object.metadata.namespace === namespace;
  }

  /** Stores an object without what the operator never reads (managedFields are most of an object's bytes). */
  private slim(object: T): T {
    if (object.metadata.managedFields) delete object.metadata.managedFields;
    return object;
  }

  /** List items carry no apiVersion/kind, metadata-only ones say PartialObjectMetadata: name the real type. */
  private typed(object: T): void {
    object.apiVersion = apiVersionOf(this.type);
    object.kind = this.type.kind;
  }

  private upsert(object: T): void {
    const key = keyOf(object.metadata);
    const old = this.store.get(key);
    this.store.set(key, this.slim(object));
    if (this.indexers.size) this.reindex(key, old, object);
    if (!old) this.emit('add', object);
    else if (old.metadata.resourceVersion !== object.metadata.resourceVersion) this.emit('update', object, old);
  }

  private remove(object: T): void {
    const key = keyOf(object.metadata);
    const old = this.store.get(key);
    this.store.delete(key);
    if (this.indexers.size) this.reindex(key, old, undefined);
    this.emit('delete', old ?? object);
  }

  /** Lists everything in scope (paginated) and makes the cache equal to it; returns the list's resourceVersion. */
  private async relist(namespace: string | undefined, signal: AbortSignal): Promise<string> {
    const seen = new Set<string>();
    let resourceVersion = '';
    let next: string | undefined;
    do {
      const page = await this.client.list<T>(this.type, namespace, {
        labelSelector: this.options.labelSelector,
        metadataOnly: this.options.metadataOnly,
        limit: 500,
        continue: next,
      });
      if (signal.aborted) return '';
      // An empty metadata-only list (PartialObjectMetadataList) comes back with `items: null`.
      for (const item of page.items ?? []) {
        this.typed(item);
        seen.add(keyOf(item.metadata));
        this.upsert(item);
      }
      next = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion ?? resourceVersion;
    } while (next);
    for (const [key, object] of this.store) if (this.inScope(object, namespace) && !seen.has(key)) this.remove(object);
    return resourceVersion;
  }

  private async run(namespace: string | undefined): Promise<void> {
    const signal = this.controller.signal;
    const { initialMs, maxMs } = this.options.backoff ?? { initialMs: 800, maxMs: 30_000 };
    const [minTimeout, maxTimeout] = this.options.watchTimeoutSeconds ?? [300, 600];
    const scope = namespace ?? '*';
    let resourceVersion: string | undefined;
    let failures = 0;
    let synced = false;
    while (!signal.aborted) {
      try {
        if (resourceVersion === undefined) {
          resourceVersion = await this.relist(namespace, signal);
          if (!synced && !signal.aborted) {
            synced = true;
            if (--this.unsynced === 0) this.syncedResolve();
          }
        }
        const watchAbort = new AbortController();
        const onStop = () => watchAbort.abort();
        signal.addEventListener('abort', onStop, { once: true });
        let expired = false;
        let received = false;
        let failed: string | undefined;
        const watchStarted = Date.now();
        try {
          await this.client.watch<T>(
            this.type,
            namespace,
            {
              resourceVersion,
              labelSelector: this.options.labelSelector,
              metadataOnly: this.options.metadataOnly,
              timeoutSeconds: Math.round(minTimeout + Math.random() * (maxTimeout - minTimeout)),
            },
            (event: WatchEvent<T>) => {
              if (expired) return;
              if (event.type === 'ERROR') {
                const status = event.object as KubeStatus;
                if (status.code === 410) expired = true;
                else failed = `error event ${status.code} ${status.message ?? ''}`;
                watchAbort.abort();
                return;
              }
              const object = event.object as T;
              this.typed(object);
              if (object.metadata?.resourceVersion) resourceVersion = object.metadata.resourceVersion;
              received = true;
              if (event.type === 'ADDED' || event.type === 'MODIFIED') this.upsert(object);
              else if (event.type === 'DELETED') this.remove(object);
            },
            watchAbort.signal,
          );
        } finally {
          signal.removeEventListener('abort', onStop);
        }
        if (signal.aborted) break;
        if (expired) {
          this.options.onWatchRestart?.('expired');
          this.options.log?.(`watch ${this.type.plural} ${scope}: resourceVersion ${resourceVersion} expired (410), relisting`);
          resourceVersion = undefined;
          failures = 0;
          continue;
        }
        // A watch that ended at once with nothing in it is a failure too: never reconnect in a tight loop.
        if (!failed && !received && Date.now() - watchStarted < 1000) failed = 'the watch ended at once';
        if (failed) throw new Error(failed);
        // The server ended the watch (its timeout): resume at once.
        this.options.onWatchRestart?.('timeout');
        failures = 0;
      } catch (error) {
        if (signal.aborted) break;
        if (isGone(error)) {
          this.options.onWatchRestart?.('expired');
          this.options.log?.(`watch ${this.type.plural} ${scope}: 410 Gone, relisting`);
          resourceVersion = undefined;
          continue;
        }
        failures++;
        this.options.onWatchRestart?.('error');
        const delay = Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 10)) * (0.5 + Math.random() / 2);
        const what = error instanceof KubeApiError ? `${error.status} ${error.reason}` : (error as Error).message;
        this.options.log?.(`watch ${this.type.plural} ${scope}: ${what}; retrying in ${Math.round(delay)} ms`);
        await sleep(delay, signal);
      }
    }
  }
}

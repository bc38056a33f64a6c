// An in-memory stand-in for the parts of the API the reconcile steps use (ReconcileClient), for unit tests that
// need no apiserver. It keeps what the steps rely on: uids and resourceVersions, 409 for a create of an existing
// name or a stale resourceVersion, 404 for a patch of a missing object, the status subresource, finalizers that
// hold a deletion, delete preconditions on uid. Server-side apply is simplified to "the desired fields win".
// The real-apiserver suites (operator/test) remain the proof against Kubernetes itself.
import { MANAGED_BY } from '../../desired/common.ts';
import { KubeApiError, type Verb } from '@boxyard/kit/kube/client.ts';
import { objectPath, resourceTypeOf, type ResourceType } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import type { EventType } from '../../runtime/events.ts';
import { controllerUid } from './ownership.ts';
import { OWNER_INDEX, type EventSink, type ObjectCache, type ReconcileClient } from './step-inputs.ts';

export interface FakeCall {
  verb: Verb;
  /** The plural, with `/status` for the status subresource. */
  resource: string;
  namespace: string | undefined;
  name: string;
}

const WRITES: ReadonlySet<Verb> = new Set(['create', 'update', 'patch', 'apply', 'delete']);
const keyOf = (type: ResourceType, namespace: string | undefined, name: string) => `${type.plural}/${namespace ?? ''}/${name}`;
const metadataOnly = (o: KubeObject): KubeObject => ({ apiVersion: o.apiVersion, kind: o.kind, metadata: o.metadata });

function apiError(status: number, reason: string, message: string, what: string): KubeApiError {
  return new KubeApiError(status, { kind: 'Status', status: 'Failure', reason, message, code: status }, what);
}

/** RFC 7386: objects merge member by member, `null` removes a member, anything else replaces. */
export function mergePatchOf(target: unknown, patch: unknown): unknown {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = target && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatchOf(out[key], value);
  }
  return out;
}

export class FakeKubeClient implements ReconcileClient {
  private readonly objects = new Map<string, KubeObject>();
  private readonly failures: { verb: Verb; plural: string; error: Error }[] = [];
  private version = 100;
  private uids = 0;
  /** Every call, reads included, in order. */
  readonly calls: FakeCall[] = [];

  /** The write calls (create, patch, apply, delete) in order, as `verb resource name`. */
  writes(): string[] {
    return this.calls.filter((c) => WRITES.has(c.verb)).map((c) => `${c.verb} ${c.resource} ${c.name}`);
  }

  /** Puts objects in place as if someone else had created them (not recorded as calls); returns them as stored. */
  seed<T extends KubeObject>(object: T): T {
    const type = resourceTypeOf(object);
    const stored = this.stamp(structuredClone(object));
    this.objects.set(keyOf(type, object.metadata.namespace, object.metadata.name), stored);
    return structuredClone(stored) as T;
  }

  /** The stored object, for assertions (a copy). */
  peek<T extends KubeObject = KubeObject>(type: ResourceType, namespace: string | undefined, name: string): T | undefined {
    const found = this.objects.get(keyOf(type, namespace, name));
    return found ? (structuredClone(found) as T) : undefined;
  }

  /** Every stored object of a type. */
  all(type: ResourceType): KubeObject[] {
    return [...this.objects.entries()].filter(([key]) => key.startsWith(`${type.plural}/`)).map(([, o]) => structuredClone(o));
  }

  /** The next call of `verb` on `plural` fails with `error` (a KubeApiError for an apiserver refusal). */
  failNext(verb: Verb, plural: string, error: Error): void {
    this.failures.push({ verb, plural, error });
  }

  /**
   * An always-synced informer cache over the store, indexed by OWNER_INDEX like the operator's. `managedOnly`:
   * only the operator's labelled objects, as its child informers select; `metadataOnly`: as the Secret informer.
   */
  cache(type: ResourceType, options: { managedOnly?: boolean; metadataOnly?: boolean } = {}): ObjectCache {
    const visible = (o: KubeObject | undefined): KubeObject | undefined => {
      if (!o || (options.managedOnly && o.metadata.labels?.['app.kubernetes.io/managed-by'] !== MANAGED_BY)) return undefined;
      return structuredClone(options.metadataOnly ? metadataOnly(o) : o);
    };
    return {
      get: (namespace, name) => visible(this.objects.get(keyOf(type, namespace, name))),
      byIndex: (index, value) => {
        if (index !== OWNER_INDEX) throw new Error(`the fake cache has no index "${index}"`);
        return this.all(type)
          .filter((o) => controllerUid(o)[0] === value)
          .flatMap((o) => visible(o) ?? []);
      },
    };
  }

  private stamp(object: KubeObject): KubeObject {
    object.metadata.uid ??= `uid-${++this.uids}`;
    object.metadata.resourceVersion = String(++this.version);
    object.metadata.generation ??= 1;
    object.metadata.creationTimestamp ??= '2026-01-01T00:00:00Z';
    return object;
  }

  private call(verb: Verb, type: ResourceType, namespace: string | undefined, name: string, subresource?: string): string {
    this.calls.push({ verb, resource: subresource ? `${type.plural}/${subresource}` : type.plural, namespace, name });
    const failure = this.failures.findIndex((f) => f.verb === verb && f.plural === type.plural);
    if (failure >= 0) throw this.failures.splice(failure, 1)[0]!.error;
    return `${verb} ${objectPath(type, namespace, name, subresource)}`;
  }

  async get<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: { metadataOnly?: boolean } = {},
  ): Promise<T | undefined> {
    this.call('get', type, namespace, name);
    const found = this.objects.get(keyOf(type, namespace, name));
    if (!found) return undefined;
    return structuredClone(options.metadataOnly ? metadataOnly(found) : found) as T;
  }

  async create<T extends KubeObject>(object: KubeObject): Promise<T> {
    const type = resourceTypeOf(object);
    const { namespace, name } = object.metadata;
    const what = this.call('create', type, namespace, name);
    if (this.objects.has(keyOf(type, namespace, name))) throw apiError(409, 'AlreadyExists', `${type.plural} "${name}" already exists`, what);
    return this.seed(object) as T;
  }

  /** Server-side apply, simplified: the applied fields replace the stored ones; status and identity stay. */
  async apply<T extends KubeObject>(object: KubeObject): Promise<T> {
    const type = resourceTypeOf(object);
    const { namespace, name } = object.metadata;
    this.call('apply', type, namespace, name);
    const key = keyOf(type, namespace, name);
    const live = this.objects.get(key);
    if (!live) return this.seed(object) as T;
    const next: KubeObject = { ...live, ...structuredClone(object), metadata: { ...live.metadata, ...structuredClone(object.metadata) } };
    if (JSON.stringify(next.spec) !== JSON.stringify(live.spec)) next.metadata.generation = (live.metadata.generation ?? 1) + 1;
    next.metadata.resourceVersion = String(++this.version);
    this.objects.set(key, next);
    return structuredClone(next) as T;
  }

  async mergePatch<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string, patch: unknown, subresource?: string): Promise<T> {
    const what = this.call('patch', type, namespace, name, subresource);
    const key = keyOf(type, namespace, name);
    const live = this.objects.get(key);
    if (!live) throw apiError(404, 'NotFound', `${type.plural} "${name}" not found`, what);
    const { metadata: metaPatch, status: statusPatch, ...rest } = (patch ?? {}) as { metadata?: Record<string, unknown>; status?: unknown };
    const { resourceVersion: precondition, ...metaRest } = metaPatch ?? {};
    if (precondition !== undefined && precondition !== live.metadata.resourceVersion) {
      throw apiError(409, 'Conflict', 'the object has been modified; please apply your changes to the latest version and try again', what);
    }
    // The status subresource takes only the status; the main resource ignores it (as for the CRDs).
    const next = (
      subresource === 'status'
        ? { ...live, status: mergePatchOf(live.status, statusPatch) }
        : { ...(mergePatchOf(live, rest) as KubeObject), metadata: mergePatchOf(live.metadata, metaRest) }
    ) as KubeObject;
    next.metadata.resourceVersion = String(++this.version);
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) this.objects.delete(key);
    else this.objects.set(key, next);
    return structuredClone(next) as T;
  }

  async delete(type: ResourceType, namespace: string | undefined, name: string, options: { uid?: string } = {}): Promise<boolean> {
    const what = this.call('delete', type, namespace, name);
    const key = keyOf(type, namespace, name);
    const live = this.objects.get(key);
    if (!live) return false;
    if (options.uid && options.uid !== live.metadata.uid)
      throw apiError(409, 'Conflict', `Precondition failed: UID in precondition: ${options.uid}, UID in object meta: ${live.metadata.uid}`, what);
    if (live.metadata.finalizers?.length) {
      live.metadata.deletionTimestamp ??= '2026-01-01T00:00:00Z';
      live.metadata.resourceVersion = String(++this.version);
    } else {
      this.objects.delete(key);
    }
    return true;
  }
}

export interface RecordedEvent {
  type: EventType;
  reason: string;
  message: string;
  object: string;
}

/** The event recorder's stand-in: keeps every event (no deduplication), for assertions. */
export class FakeEvents implements EventSink {
  readonly recorded: RecordedEvent[] = [];

  async record(object: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    this.recorded.push({ type, reason, message, object: `${object.kind} ${object.metadata.namespace}/${object.metadata.name}` });
  }

  reasons(): string[] {
    return this.recorded.map((e) => e.reason);
  }
}

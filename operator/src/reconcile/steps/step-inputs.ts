// What the reconcile steps are given: the parts of the API client, the informer caches and the event recorder they
// use, and nothing more. The operator passes the real ones; unit tests pass an in-memory fake (fake-client.ts).
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import type { Informer } from '../../runtime/informer.ts';

/** The API calls a reconcile makes (lists and watches belong to the informers). */
export type ReconcileClient = Pick<KubeClient, 'get' | 'create' | 'apply' | 'mergePatch' | 'delete'>;

/** Where the steps record Kubernetes Events (best effort: recording never fails a step). */
export type EventSink = Pick<EventRecorder, 'record'>;

/** A synced informer cache, read by name or by index. */
export type ObjectCache<T extends KubeObject = KubeObject> = Pick<Informer<T>, 'get' | 'byIndex'>;

/** Index of child informers: the uid of the controlling owner. */
export const OWNER_INDEX = 'owner';

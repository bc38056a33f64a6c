// Kubernetes Events for the notable steps of a reconcile (children created, ready, stalled, data deleted), shown by
// `kubectl describe` and `kubectl events`. Best effort: an event that cannot be written never fails a reconcile.
// The same event for the same object is not repeated within ten minutes, so a resource retrying with backoff does
// not flood the namespace.
import { randomBytes } from 'node:crypto';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';

export type EventType = 'Normal' | 'Warning';

const REPEAT_WINDOW_MS = 10 * 60_000;

export class EventRecorder {
  private readonly client: KubeClient;
  private readonly component: string;
  private readonly instance: string;
  private readonly log: ((message: string) => void) | undefined;
  private readonly recent = new Map<string, number>();

  constructor(client: KubeClient, options: { component: string; instance: string; log?: (message: string) => void }) {
    this.client = client;
    this.component = options.component;
    this.instance = options.instance;
    this.log = options.log;
  }

  async record(object: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    const { name, namespace, uid } = object.metadata;
    if (!namespace) return;
    const dedupeKey = `${uid}\u0000${reason}\u0000${message}`;
    const now = Date.now();
    const last = this.recent.get(dedupeKey);
    if (last !== undefined && now - last < REPEAT_WINDOW_MS) return;
    this.recent.set(dedupeKey, now);
    if (this.recent.size > 10_000) {
      for (const [key, at] of this.recent) if (now - at >= REPEAT_WINDOW_MS) this.recent.delete(key);
    }
    const time = new Date(now).toISOString();
    try {
      await this.client.create({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace },
        involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name, namespace, uid, resourceVersion: object.metadata.resourceVersion },
        reason,
        message: message.slice(0, 1024),
        type,
        source: { component: this.component },
        reportingComponent: this.component,
        reportingInstance: this.instance,
        firstTimestamp: time,
        lastTimestamp: time,
        count: 1,
      });
    } catch (error) {
      this.log?.(`event ${reason} for ${namespace}/${name} not recorded: ${(error as Error).message}`);
    }
  }
}

// The leader's work: shared informers (the managed children of every kind, and Secrets by metadata only), one
// controller per kind, run until leadership ends. A standby replica runs none of it.
import type { ServiceResource } from './crds/types.ts';
import { MANAGED_BY_SELECTOR } from './desired/common.ts';
import { allKinds } from './desired/kinds.ts';
import type { TracingDefaults } from './desired/tracing.ts';
import { KubeApiError, type KubeClient } from '@boxyard/kit/kube/client.ts';
import { resources, type ResourceType } from '@boxyard/kit/kube/resources.ts';
import { keyOf, type KubeObject } from '@boxyard/kit/kube/types.ts';
import type { ImagePolicy } from './reconcile/image-policy.ts';
import { OWNER_INDEX, SECRET_INDEX, ServiceReconciler, controllerUid, referencedSecrets } from './reconcile/service-reconciler.ts';
import { backupControllers } from './backups/controllers.ts';
import { Controller } from './runtime/controller.ts';
import { EventRecorder } from './runtime/events.ts';
import { Informer } from './runtime/informer.ts';
import type { LeaderElector } from './runtime/leader-election.ts';
import type { Logger } from './runtime/logger.ts';
import type { OperatorMetrics } from './runtime/metrics.ts';
import { RateLimiter } from './runtime/queue.ts';
import type { OperatorOptions } from './operator.ts';
import { ignoreError } from '@boxyard/kit';

/** What every part of a running operator shares: its settings, its clients, and whether it leads and is synced. */
export interface Operator {
  options: OperatorOptions;
  logger: Logger;
  /** Info lines without fields (the runtime's parts take a plain function). */
  log: (line: string) => void;
  identity: string;
  client: KubeClient;
  metrics: OperatorMetrics;
  namespaces: string[] | undefined;
  resyncMs: number;
  defaultImage: string;
  tracing: TracingDefaults;
  imagePolicy: ImagePolicy;
  elector: LeaderElector | undefined;
  synced: boolean;
}

const CHILD_TYPES: ResourceType[] = [
  resources.deployment,
  resources.service,
  resources.configMap,
  resources.serviceAccount,
  resources.roleBinding,
  resources.ingress,
  resources.networkPolicy,
  resources.podDisruptionBudget,
];

/** Whether the ServiceMonitor CRD is served, asked at most once a minute. */
function serviceMonitorDiscovery(client: KubeClient, log: (line: string) => void): () => Promise<boolean> {
  let cached: { value: boolean; at: number } | undefined;
  return async () => {
    if (cached && Date.now() - cached.at < 60_000) return cached.value;
    let value = false;
    try {
      const list = await client.request<{ resources?: { name: string }[] }>('GET', '/apis/monitoring.coreos.com/v1', { verb: 'get', resource: 'discovery' });
      value = (list.resources ?? []).some((r) => r.name === 'servicemonitors');
    } catch (error) {
      if (!(error instanceof KubeApiError && error.status === 404)) log(`ServiceMonitor discovery failed: ${(error as Error).message}`);
    }
    cached = { value, at: Date.now() };
    return value;
  };
}

/** The informers the controllers share: the managed children of every kind, and the Secrets (metadata only). */
interface SharedInformers {
  informer<T extends KubeObject>(type: ResourceType, extra?: { labelSelector?: string; metadataOnly?: boolean; resyncMs?: number }): Informer<T>;
  children: Map<string, Informer>;
  secrets: Informer;
}

function sharedInformers({ client, namespaces, log, metrics }: Operator): SharedInformers {
  const informer = <T extends KubeObject>(type: ResourceType, extra: { labelSelector?: string; metadataOnly?: boolean; resyncMs?: number } = {}) =>
    new Informer<T>(client, { namespaces, log, type, ...extra, onWatchRestart: metrics.watchRestartCounter(type.plural) });
  const children = new Map<string, Informer>();
  for (const type of CHILD_TYPES) {
    const child = informer(type, { labelSelector: MANAGED_BY_SELECTOR });
    child.addIndex(OWNER_INDEX, controllerUid);
    children.set(type.plural, child);
  }
  // Metadata only: the operator must see the Secrets resources reference, but never holds their values.
  const secrets = informer(resources.secret, { metadataOnly: true });
  secrets.addIndex(OWNER_INDEX, controllerUid);
  return { informer, children, secrets };
}

/** One controller per kind, each with its primary informer. */
function kindControllers(operator: Operator, shared: SharedInformers): { primaries: Informer<ServiceResource>[]; controllers: Controller<ServiceResource>[] } {
  const { client, log, options } = operator;
  const { children, secrets } = shared;
  const events = new EventRecorder(client, { component: 'boxyard-operator', instance: operator.identity, log });
  const serviceMonitorAvailable = serviceMonitorDiscovery(client, log);
  const primaries: Informer<ServiceResource>[] = [];
  const controllers: Controller<ServiceResource>[] = [];
  // One token bucket for all kinds: retries together stay under 10/s.
  const limiter = new RateLimiter();
  for (const kind of allKinds) {
    const primary = shared.informer<ServiceResource>(kind.resource, { resyncMs: operator.resyncMs });
    primary.addIndex(SECRET_INDEX, referencedSecrets);
    primaries.push(primary);
    const reconciler = new ServiceReconciler({
      client,
      kind,
      primary,
      children,
      secrets,
      events,
      defaultImage: operator.defaultImage,
      tracing: operator.tracing,
      imagePolicy: operator.imagePolicy,
      gatewayClusterRole: options.gatewayClusterRole,
      peers: () => primaries.flatMap((p) => p.list()),
      serviceMonitorAvailable,
      log,
    });
    const controller = new Controller<ServiceResource>({
      name: kind.resource.plural,
      primary,
      reconcile: reconciler.reconcile,
      onPaused: reconciler.onPaused,
      workers: options.workers ?? 4,
      metrics: operator.metrics,
      limiter,
      logger: operator.logger,
      log,
    });
    for (const child of children.values()) controller.watchOwned(child);
    controller.watchOwned(secrets);
    controller.watchMapped(secrets, (secret) => primary.byIndex(SECRET_INDEX, keyOf(secret.metadata)).map((r) => keyOf(r.metadata)));
    controllers.push(controller);
  }
  return { primaries, controllers };
}

/** Runs the informers and controllers until `stop` aborts. */
export async function lead(operator: Operator, stop: AbortSignal): Promise<void> {
  const { metrics, log, namespaces } = operator;
  metrics.leader.set(1);
  const shared = sharedInformers(operator);
  const { primaries, controllers: kindOnes } = kindControllers(operator, shared);
  const backups = backupControllers({
    client: operator.client,
    informer: shared.informer,
    primaries,
    secrets: shared.secrets,
    events: new EventRecorder(operator.client, { component: 'boxyard-operator', instance: operator.identity, log }),
    defaultImage: operator.defaultImage,
    metrics,
    resyncMs: operator.resyncMs,
    workers: operator.options.workers ?? 4,
    logger: operator.logger,
    log,
  });
  const controllers = [...kindOnes, ...backups.controllers] as Controller<KubeObject>[];
  const all = [...primaries, ...shared.children.values(), shared.secrets, ...backups.informers] as Informer[];
  metrics.cacheSizes = () => Object.fromEntries(all.map((i) => [i.type.plural, i.size]));
  for (const i of all) i.start();
  const started = Promise.all(controllers.map((c) => c.start())).then(() => {
    operator.synced = true;
    log(
      `caches synced; reconciling ${allKinds.map((k) => k.kind).join(', ')}, Backup, ScheduledBackup in ${namespaces ? namespaces.join(', ') : 'all namespaces'}`,
    );
  });
  await new Promise<void>((resolve) => (stop.aborted ? resolve() : stop.addEventListener('abort', () => resolve(), { once: true })));
  operator.synced = false;
  await Promise.all(controllers.map((c) => c.stop()));
  await Promise.all(all.map((i) => i.stop()));
  await started.catch(ignoreError("the start's failure was reported where it happened"));
  metrics.cacheSizes = () => ({});
  metrics.leader.set(0);
}

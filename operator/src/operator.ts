// The operator: shared informers, one controller per kind, leader election, and the metrics/health endpoints.
// Only the leader runs informers and controllers; a standby replica holds no cache and issues no writes.
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { ServiceResource } from './crds/types.ts';
import { MANAGED_BY_SELECTOR } from './desired/common.ts';
import { allKinds } from './desired/kinds.ts';
import { KubeClient, KubeApiError } from './kube/client.ts';
import { loadCredentials } from './kube/credentials.ts';
import { resources, type ResourceType } from './kube/resources.ts';
import { keyOf, type KubeObject } from './kube/types.ts';
import { ImagePolicy, repositoryOf } from './reconcile/image-policy.ts';
import { OWNER_INDEX, SECRET_INDEX, ServiceReconciler, controllerUid, referencedSecrets } from './reconcile/service-reconciler.ts';
import { Controller } from './runtime/controller.ts';
import { EventRecorder } from './runtime/events.ts';
import { startHttpServer } from './runtime/http-server.ts';
import { kubernetesMetricsAuth } from './runtime/metrics-auth.ts';
import { Informer } from './runtime/informer.ts';
import { LeaderElector } from './runtime/leader-election.ts';
import { OperatorMetrics } from './runtime/metrics.ts';
import { RateLimiter } from './runtime/queue.ts';
import { tracingDefaultsFrom, type TracingDefaults } from './desired/tracing.ts';

export const DEFAULT_IMAGE = 'ghcr.io/boxyard/boxyard:0.1.0';

export interface LeaderElectionSettings {
  /** Namespace of the Lease (the operator's own namespace). */
  namespace: string;
  /** Lease name (default boxyard-operator). */
  name?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export interface OperatorOptions {
  /** Path of a kubeconfig; without it the in-cluster service account (or $KUBECONFIG, ~/.kube/config) is used. */
  kubeconfig?: string;
  /** Namespaces to watch; empty or undefined: all namespaces. */
  namespaces?: string[];
  /** Port of /metrics, /health, /health/ready (default 8080; 0 picks a free one). */
  metricsPort?: number;
  metricsHost?: string;
  /** Lease-based leader election; off when undefined (a single replica). */
  leaderElection?: LeaderElectionSettings;
  /** This replica's name in the Lease and in Events (default: hostname + random suffix). */
  identity?: string;
  /** Image of the service pods when a resource names none (always allowed). */
  defaultImage?: string;
  /** OTEL_* settings for service pods whose resource sets none (default: the operator's own OTEL_* variables). */
  tracing?: TracingDefaults;
  /**
   * Images resources may name (spec.image, spec.sessionPod.image): repositories, full references, or prefixes
   * ending in `*`; `*` alone allows any. Default: the default image's repository.
   */
  allowedImages?: string[];
  /** The ClusterRole the terminal gateways are bound to (the chart's `<release>-terminal-gateway`). */
  gatewayClusterRole?: string;
  /** `kubernetes`: /metrics needs a bearer token the apiserver accepts, of a user allowed to get /metrics. */
  metricsAuth?: 'kubernetes' | 'none';
  /** Concurrent reconciles per kind (default 4). */
  workers?: number;
  /** How often every resource is reconciled even without events (default 10 minutes). */
  resyncMs?: number;
  log?: (line: string) => void;
}

export interface RunningOperator {
  /** The port /metrics and the health endpoints listen on. */
  port: number;
  metrics: OperatorMetrics;
  isLeader(): boolean;
  stop(): Promise<void>;
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

export async function runOperator(options: OperatorOptions = {}): Promise<RunningOperator> {
  const log = options.log ?? ((line: string) => console.log(`${new Date().toISOString()} ${line}`));
  const identity = options.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
  const credentials = await loadCredentials(options.kubeconfig);
  const metrics = new OperatorMetrics();
  let elector: LeaderElector | undefined;
  const client = new KubeClient(credentials, {
    onRequest: metrics.recordRequest,
    mayWrite: () => !elector || elector.isLeader(),
    userAgent: `boxyard-operator/${identity}`,
  });
  const namespaces = options.namespaces?.filter(Boolean).length ? options.namespaces.filter(Boolean) : undefined;
  const resyncMs = options.resyncMs ?? 10 * 60_000;
  const defaultImage = options.defaultImage ?? DEFAULT_IMAGE;
  const tracing = options.tracing ?? tracingDefaultsFrom(process.env);
  const imagePolicy = new ImagePolicy(options.allowedImages?.length ? options.allowedImages : [repositoryOf(defaultImage)], [defaultImage]);
  let synced = false;

  /** Runs the informers and controllers until `stop` aborts. */
  const lead = async (stop: AbortSignal): Promise<void> => {
    metrics.leader.set(1);
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
    const events = new EventRecorder(client, { component: 'boxyard-operator', instance: identity, log });
    const serviceMonitorAvailable = serviceMonitorDiscovery(client, log);
    const primaries: Informer<ServiceResource>[] = [];
    const controllers: Controller<ServiceResource>[] = [];
    // One token bucket for all kinds: retries together stay under 10/s.
    const limiter = new RateLimiter();
    for (const kind of allKinds) {
      const primary = informer<ServiceResource>(kind.resource, { resyncMs });
      primary.addIndex(SECRET_INDEX, referencedSecrets);
      primaries.push(primary);
      const reconciler = new ServiceReconciler({
        client,
        kind,
        primary,
        children,
        secrets,
        events,
        defaultImage,
        tracing,
        imagePolicy,
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
        metrics,
        limiter,
        log,
      });
      for (const child of children.values()) controller.watchOwned(child);
      controller.watchOwned(secrets);
      controller.watchMapped(secrets, (secret) => primary.byIndex(SECRET_INDEX, keyOf(secret.metadata)).map((r) => keyOf(r.metadata)));
      controllers.push(controller);
    }
    const all = [...primaries, ...children.values(), secrets] as Informer[];
    metrics.cacheSizes = () => Object.fromEntries(all.map((i) => [i.type.plural, i.size]));
    for (const i of all) i.start();
    const started = Promise.all(controllers.map((c) => c.start())).then(() => {
      synced = true;
      log(`caches synced; reconciling ${allKinds.map((k) => k.kind).join(', ')} in ${namespaces ? namespaces.join(', ') : 'all namespaces'}`);
    });
    await new Promise<void>((resolve) => (stop.aborted ? resolve() : stop.addEventListener('abort', () => resolve(), { once: true })));
    synced = false;
    await Promise.all(controllers.map((c) => c.stop()));
    await Promise.all(all.map((i) => i.stop()));
    await started.catch(() => {});
    metrics.cacheSizes = () => ({});
    metrics.leader.set(0);
  };

  // Its own client: token reviews are neither the leader's writes nor counted with the reconcilers' requests.
  const reviewClient = options.metricsAuth === 'none' ? undefined : new KubeClient(credentials, { userAgent: `boxyard-operator/${identity}` });
  const http = await startHttpServer({
    host: options.metricsHost,
    port: options.metricsPort ?? 8080,
    registry: metrics.registry,
    authorizeMetrics: reviewClient ? kubernetesMetricsAuth(reviewClient) : undefined,
    // A standby replica is ready (it serves /metrics and waits); the leader once its caches are synced.
    ready: () => (elector ? !elector.isLeader() || synced : synced),
  });

  const shutdown = new AbortController();
  let running: Promise<void>;
  if (options.leaderElection) {
    const le = options.leaderElection;
    elector = new LeaderElector(client, {
      namespace: le.namespace,
      name: le.name ?? 'boxyard-operator',
      identity,
      leaseDurationMs: le.leaseDurationMs,
      renewDeadlineMs: le.renewDeadlineMs,
      retryPeriodMs: le.retryPeriodMs,
      log,
    });
    log(`operator ${identity} started; waiting for the lease ${le.namespace}/${le.name ?? 'boxyard-operator'}`);
    running = elector.run(shutdown.signal, lead);
  } else {
    log(`operator ${identity} started without leader election`);
    running = lead(shutdown.signal);
  }
  log(`images allowed: ${imagePolicy.describe()}; /metrics ${reviewClient ? 'needs a bearer token allowed to get /metrics' : 'is open (--metrics-auth=none)'}`);
  running.catch((error: unknown) => log(`operator stopped with an error: ${String(error)}`));

  return {
    port: http.port,
    metrics,
    isLeader: () => (elector ? elector.isLeader() : true),
    async stop() {
      shutdown.abort();
      await running.catch(() => {});
      await http.close();
      client.close();
      reviewClient?.close();
    },
  };
}

// The operator: leader election and the metrics/health endpoints. Only the leader runs informers and controllers
// (leader.ts); a standby replica holds no cache and issues no writes.
import { hostname } from 'node:os';
import { ignoreError, logIgnoredErrorsTo } from '@boxyard/kit';
import { randomUUID } from 'node:crypto';
import { tracingDefaultsFrom, type TracingDefaults } from './desired/tracing.ts';
import { KubeClient } from '@boxyard/kit/kube/client.ts';
import { loadCredentials } from '@boxyard/kit/kube/credentials.ts';
import { lead, type Operator } from './leader.ts';
import { ImagePolicy, repositoryOf } from './reconcile/image-policy.ts';
import { startHttpServer } from './runtime/http-server.ts';
import { kubernetesMetricsAuth } from './runtime/metrics-auth.ts';
import { LeaderElector } from './runtime/leader-election.ts';
import { createOperatorLogger, type Logger } from './runtime/logger.ts';
import { OperatorMetrics } from './runtime/metrics.ts';

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
  /** Default: pino to stdout (runtime/logger.ts). */
  logger?: Logger;
}

export interface RunningOperator {
  /** The port /metrics and the health endpoints listen on. */
  port: number;
  metrics: OperatorMetrics;
  isLeader(): boolean;
  stop(): Promise<void>;
}

export async function runOperator(options: OperatorOptions = {}): Promise<RunningOperator> {
  const logger = options.logger ?? createOperatorLogger();
  logIgnoredErrorsTo(logger);
  const log = (line: string) => logger.info(line);
  const identity = options.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
  const credentials = loadCredentials(options.kubeconfig);
  const operator = describeOperator(options, logger, identity, credentials);

  // Its own client: token reviews are neither the leader's writes nor counted with the reconcilers' requests.
  const reviewClient = options.metricsAuth === 'none' ? undefined : new KubeClient(credentials, { userAgent: `boxyard-operator/${identity}` });
  const http = await startHttpServer({
    host: options.metricsHost,
    port: options.metricsPort ?? 8080,
    registry: operator.metrics.registry,
    authorizeMetrics: reviewClient ? kubernetesMetricsAuth(reviewClient) : undefined,
    // A standby replica is ready (it serves /metrics and waits); the leader once its caches are synced.
    ready: () => (operator.elector ? !operator.elector.isLeader() || operator.synced : operator.synced),
  });

  const shutdown = new AbortController();
  const running = leadWhenElected(operator, shutdown.signal);
  log(
    `images allowed: ${operator.imagePolicy.describe()}; /metrics ${reviewClient ? 'needs a bearer token allowed to get /metrics' : 'is open (--metrics-auth=none)'}`,
  );
  running.catch((error: unknown) => logger.error({ error: String(error) }, 'operator stopped with an error'));

  return {
    port: http.port,
    metrics: operator.metrics,
    isLeader: () => (operator.elector ? operator.elector.isLeader() : true),
    async stop() {
      shutdown.abort();
      await running.catch(ignoreError("the run's failure was reported where it happened"));
      await http.close();
      operator.client.close();
      reviewClient?.close();
    },
  };
}

function describeOperator(options: OperatorOptions, logger: Logger, identity: string, credentials: ReturnType<typeof loadCredentials>): Operator {
  const metrics = new OperatorMetrics();
  const defaultImage = options.defaultImage ?? DEFAULT_IMAGE;
  const operator: Operator = {
    options,
    logger,
    log: (line: string) => logger.info(line),
    identity,
    metrics,
    client: new KubeClient(credentials, {
      onRequest: metrics.recordRequest,
      mayWrite: () => !operator.elector || operator.elector.isLeader(),
      userAgent: `boxyard-operator/${identity}`,
    }),
    namespaces: options.namespaces?.filter(Boolean).length ? options.namespaces.filter(Boolean) : undefined,
    resyncMs: options.resyncMs ?? 10 * 60_000,
    defaultImage,
    tracing: options.tracing ?? tracingDefaultsFrom(process.env),
    imagePolicy: new ImagePolicy(options.allowedImages?.length ? options.allowedImages : [repositoryOf(defaultImage)], [defaultImage]),
    elector: undefined,
    synced: false,
  };
  return operator;
}

/** Leads at once without leader election; with it, whenever this replica holds the Lease. */
function leadWhenElected(operator: Operator, stop: AbortSignal): Promise<void> {
  const { options, identity, log } = operator;
  const le = options.leaderElection;
  if (!le) {
    log(`operator ${identity} started without leader election`);
    return lead(operator, stop);
  }
  operator.elector = new LeaderElector(operator.client, {
    namespace: le.namespace,
    name: le.name ?? 'boxyard-operator',
    identity,
    leaseDurationMs: le.leaseDurationMs,
    renewDeadlineMs: le.renewDeadlineMs,
    retryPeriodMs: le.retryPeriodMs,
    log,
  });
  log(`operator ${identity} started; waiting for the lease ${le.namespace}/${le.name ?? 'boxyard-operator'}`);
  return operator.elector.run(stop, (signal) => lead(operator, signal));
}

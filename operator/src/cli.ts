// `boxyard operator [flags]`: flags, with environment fallbacks for the chart's Deployment.
import { parseArgs } from 'node:util';
import { DEFAULT_GATEWAY_CLUSTER_ROLE } from './desired/rbac.ts';
import { DEFAULT_IMAGE, runOperator, type OperatorOptions } from './operator.ts';

export const operatorUsage = `usage: boxyard operator [flags]
  --kubeconfig FILE              kubeconfig (default: in-cluster service account, then $KUBECONFIG)
  --namespaces a,b               namespaces to watch (env BOXYARD_WATCH_NAMESPACES; default: all)
  --metrics-port N               port of /metrics, /health, /health/ready (default 8080)
  --metrics-host ADDR            listen address (default 0.0.0.0)
  --metrics-auth kubernetes|none /metrics needs a bearer token the apiserver accepts (TokenReview) of a user
                                 allowed to get /metrics (SubjectAccessReview); none: open (default kubernetes)
  --leader-elect                 take part in Lease leader election (for more than one replica)
  --leader-election-namespace NS namespace of the Lease (env POD_NAMESPACE)
  --leader-election-id NAME      name of the Lease (default boxyard-operator)
  --lease-duration SECONDS       (default 15)   --renew-deadline SECONDS (default 10)   --retry-period SECONDS (default 2)
  --identity NAME                this replica's name (env POD_NAME; default hostname + random suffix)
  --default-image IMAGE          image of the service pods when a resource names none (env BOXYARD_IMAGE; default ${DEFAULT_IMAGE})
  --allowed-images a,b           images resources may name: repositories (any tag), full references, prefixes
                                 ending in * ; * allows any (env BOXYARD_ALLOWED_IMAGES; default: the default
                                 image's repository; the default image is always allowed)
  --gateway-cluster-role NAME    ClusterRole the terminal gateways are bound to (default ${DEFAULT_GATEWAY_CLUSTER_ROLE})
  --workers N                    concurrent reconciles per kind (default 4)
  --resync-period SECONDS        reconcile everything this often without events (default 600)`;

export class OperatorUsageError extends Error {}

export function parseOperatorArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): OperatorOptions {
  const { values } = parseArgs({
    args: argv,
    allowPositionals: false,
    options: {
      kubeconfig: { type: 'string' },
      namespaces: { type: 'string' },
      'metrics-port': { type: 'string' },
      'metrics-host': { type: 'string' },
      'metrics-auth': { type: 'string' },
      'allowed-images': { type: 'string' },
      'gateway-cluster-role': { type: 'string' },
      'leader-elect': { type: 'boolean' },
      'leader-election-namespace': { type: 'string' },
      'leader-election-id': { type: 'string' },
      'lease-duration': { type: 'string' },
      'renew-deadline': { type: 'string' },
      'retry-period': { type: 'string' },
      identity: { type: 'string' },
      'default-image': { type: 'string' },
      workers: { type: 'string' },
      'resync-period': { type: 'string' },
    },
  });
  const number = (name: string, raw: string | undefined): number | undefined => {
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0) throw new OperatorUsageError(`--${name} must be a non-negative number, not "${raw}"`);
    return n;
  };
  const seconds = (name: string, raw: string | undefined) => {
    const n = number(name, raw);
    return n === undefined ? undefined : n * 1000;
  };
  const namespaces = (values.namespaces ?? env.BOXYARD_WATCH_NAMESPACES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const metricsAuth = values['metrics-auth'] ?? 'kubernetes';
  if (metricsAuth !== 'kubernetes' && metricsAuth !== 'none') throw new OperatorUsageError(`--metrics-auth must be kubernetes or none, not "${metricsAuth}"`);
  const list = (raw: string | undefined) =>
    (raw ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const options: OperatorOptions = {
    kubeconfig: values.kubeconfig,
    namespaces,
    metricsPort: number('metrics-port', values['metrics-port']) ?? 8080,
    metricsHost: values['metrics-host'],
    metricsAuth,
    identity: values.identity ?? env.POD_NAME,
    defaultImage: values['default-image'] ?? env.BOXYARD_IMAGE ?? DEFAULT_IMAGE,
    allowedImages: list(values['allowed-images'] ?? env.BOXYARD_ALLOWED_IMAGES),
    gatewayClusterRole: values['gateway-cluster-role'] ?? DEFAULT_GATEWAY_CLUSTER_ROLE,
    workers: number('workers', values.workers),
    resyncMs: seconds('resync-period', values['resync-period']),
  };
  if (values['leader-elect']) {
    const namespace = values['leader-election-namespace'] ?? env.POD_NAMESPACE;
    if (!namespace) throw new OperatorUsageError('--leader-elect needs --leader-election-namespace (or POD_NAMESPACE)');
    options.leaderElection = {
      namespace,
      name: values['leader-election-id'],
      leaseDurationMs: seconds('lease-duration', values['lease-duration']),
      renewDeadlineMs: seconds('renew-deadline', values['renew-deadline']),
      retryPeriodMs: seconds('retry-period', values['retry-period']),
    };
  }
  return options;
}

/** Runs the operator until SIGTERM/SIGINT; what `boxyard operator` calls. */
export async function operatorCli(argv: string[]): Promise<void> {
  const running = await runOperator(parseOperatorArgs(argv));
  const shutdown = () => {
    void running.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

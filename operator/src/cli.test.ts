import { describe, expect, it } from 'vitest';
import { OperatorUsageError, parseOperatorArgs } from './cli.ts';
import { DEFAULT_IMAGE } from './operator.ts';

describe('boxyard operator flags', () => {
  it('runs without leader election on all namespaces by default', () => {
    expect(parseOperatorArgs([], {})).toEqual({
      kubeconfig: undefined,
      namespaces: [],
      metricsPort: 8080,
      metricsHost: undefined,
      metricsAuth: 'kubernetes',
      allowedImages: [],
      gatewayClusterRole: 'boxyard-terminal-gateway',
      identity: undefined,
      defaultImage: DEFAULT_IMAGE,
      workers: undefined,
      resyncMs: undefined,
    });
  });

  it('reads what the chart passes: leader election in the pod namespace, namespaces, durations in seconds', () => {
    const options = parseOperatorArgs(
      [
        '--leader-elect',
        '--leader-election-id=boxyard',
        '--lease-duration=15',
        '--renew-deadline=10',
        '--retry-period=2',
        '--namespaces=a, b',
        '--resync-period=600',
        '--workers=8',
      ],
      { POD_NAMESPACE: 'boxyard-system', POD_NAME: 'boxyard-7d9f-abcde', BOXYARD_IMAGE: 'registry.example/boxyard:1' },
    );
    expect(options).toMatchObject({
      namespaces: ['a', 'b'],
      identity: 'boxyard-7d9f-abcde',
      defaultImage: 'registry.example/boxyard:1',
      workers: 8,
      resyncMs: 600_000,
      leaderElection: { namespace: 'boxyard-system', name: 'boxyard', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
    });
  });

  it('refuses leader election without a namespace, bad numbers and unknown flags', () => {
    expect(() => parseOperatorArgs(['--leader-elect'], {})).toThrow(OperatorUsageError);
    expect(() => parseOperatorArgs(['--metrics-port=http'], {})).toThrow(/--metrics-port must be a non-negative number/);
    expect(() => parseOperatorArgs(['--frobnicate'], {})).toThrow(/Unknown option/);
    expect(() => parseOperatorArgs(['--metrics-auth=maybe'], {})).toThrow(/--metrics-auth must be kubernetes or none/);
  });

  it('reads the image allow-list, the gateway ClusterRole and the metrics authentication', () => {
    expect(
      parseOperatorArgs(
        ['--allowed-images=ghcr.io/boxyard/boxyard, registry.example/*', '--gateway-cluster-role=rel-terminal-gateway', '--metrics-auth=none'],
        {},
      ),
    ).toMatchObject({
      allowedImages: ['ghcr.io/boxyard/boxyard', 'registry.example/*'],
      gatewayClusterRole: 'rel-terminal-gateway',
      metricsAuth: 'none',
    });
    expect(parseOperatorArgs([], { BOXYARD_ALLOWED_IMAGES: 'a/b,c/d:1' }).allowedImages).toEqual(['a/b', 'c/d:1']);
  });
});

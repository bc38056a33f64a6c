// The harness's NetworkPolicy enforcer renders what the terminal's session policy asks for: egress to DNS pods and
// to public IPv4 ranges only (ipBlock with except), IPv6 blocks skipped (the node's pods are IPv4-only).
import { describe, expect, it } from 'vitest';
import { sessionNetworkPolicy } from '@boxyard/terminal/backends/kubernetes.ts';
import { terminalConfigSchema } from '@boxyard/terminal/config.ts';
import { renderRules } from './network-policy.ts';

describe('the iptables NetworkPolicy enforcer', () => {
  it("renders the session pods' egress: DNS pods, public IPv4 minus the excepted ranges, and a drop", () => {
    const config = terminalConfigSchema.parse({
      database: { url: 'postgres://u:p@db/x' },
      session: { secret: 'x'.repeat(64) },
      backend: { kind: 'kubernetes', kubernetes: { image: 'i', pool: 'shells', gateway_pod_labels: { app: 'gw' } } },
    } as never) as { backend: { kubernetes: Parameters<typeof sessionNetworkPolicy>[0] } };
    const policy = sessionNetworkPolicy(config.backend.kubernetes, 'apps');
    const session = { namespace: 'apps', labels: { ...policy.spec!.podSelector!.matchLabels }, ip: '10.245.0.9', ports: new Map() };
    const dns = { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' }, ip: '10.245.0.2', ports: new Map() };
    const other = { namespace: 'apps', labels: { app: 'box-repository' }, ip: '10.245.0.3', ports: new Map() };
    const { rules, sets } = renderRules(
      [policy],
      [session, dns, other],
      new Map<string, Record<string, string>>([
        ['apps', {}],
        ['kube-system', { 'kubernetes.io/metadata.name': 'kube-system' }],
      ]),
    );
    const egress = rules.split('\n').filter((l) => l.startsWith('-A BOXYARD-NP-OUT-'));
    expect(egress.filter((l) => l.includes('-d 10.245.0.2/32'))).toHaveLength(2); // UDP and TCP 53
    expect(egress.some((l) => l.includes('10.245.0.3'))).toBe(false); // no other pod
    expect(egress.filter((l) => l.includes('-d 0.0.0.0/0'))).toHaveLength(1);
    expect(egress.find((l) => l.includes('-d 0.0.0.0/0'))!.match(/! --match-set/g)).toHaveLength(5);
    expect(egress.some((l) => l.includes('::/0'))).toBe(false);
    expect(egress.at(-1)).toMatch(/-j DROP$/);
    expect(sets.sort()).toEqual(['10.0.0.0/8', '100.64.0.0/10', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16']);
  });
});

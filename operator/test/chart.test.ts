// The Helm chart, checked with the real helm (built from Go modules) and accepted by the real apiserver.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { chartDir, helm, kubectl, renderChart, type RenderedObject } from './support.ts';

const kubeconfig = inject('kubeconfig');
const id = randomBytes(3).toString('hex');
const system = `boxyard-system-${id}`;
const teams = [`team-a-${id}`, `team-b-${id}`];

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
const byKind = (objects: RenderedObject[], kind: string) => objects.filter((o) => o.kind === kind);
const args = (objects: RenderedObject[]) =>
  ((byKind(objects, 'Deployment')[0] as unknown as { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!.args);

beforeAll(async () => {
  for (const ns of [system, ...teams]) await kubectl(kubeconfig, ['create', 'namespace', ns]);
});
afterAll(async () => {
  for (const ns of [system, ...teams]) await kubectl(kubeconfig, ['delete', 'namespace', ns, '--wait=false']).catch(() => {});
});

describe('charts/boxyard', () => {
  it('passes helm lint --strict', async () => {
    expect(await helm(['lint', '--strict', chartDir])).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders two replicas with leader election, a ClusterRole, a metrics Service and a PodDisruptionBudget by default', async () => {
    const { objects } = await renderChart(system);
    expect(objects.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'PodDisruptionBudget', 'Role', 'RoleBinding', 'Service', 'ServiceAccount']);
    const deployment = byKind(objects, 'Deployment')[0] as unknown as { spec: { replicas: number } };
    expect(deployment.spec.replicas).toBe(2);
    expect(args(objects)).toEqual(expect.arrayContaining(['operator', '--leader-elect', '--leader-election-namespace=$(POD_NAMESPACE)', '--leader-election-id=boxyard']));
    expect(args(objects).some((a) => a.startsWith('--namespaces'))).toBe(false);
    // The leader-election Role reaches only the operator's own Lease.
    const leaseRole = byKind(objects, 'Role')[0] as unknown as { metadata: { namespace: string }; rules: Rule[] };
    expect(leaseRole.metadata.namespace).toBe(system);
    expect(leaseRole.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['boxyard'], verbs: ['get', 'update'] },
    ]);
  });

  it('grants least privilege: no wildcards, Secrets never deleted, nothing beyond what the operator writes', async () => {
    const { objects } = await renderChart(system);
    const rules = (byKind(objects, 'ClusterRole')[0] as unknown as { rules: Rule[] }).rules;
    for (const rule of rules) {
      expect(rule.verbs).not.toContain('*');
      expect(rule.resources).not.toContain('*');
      expect(rule.apiGroups).not.toContain('*');
      expect(rule.verbs).not.toContain('escalate');
      expect(rule.verbs).not.toContain('bind');
    }
    const verbsOn = (group: string, resource: string) => rules.filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource)).flatMap((r) => r.verbs);
    expect(verbsOn('', 'secrets')).not.toContain('delete');
    expect(verbsOn('', 'nodes')).toEqual([]);
    expect(verbsOn('apiextensions.k8s.io', 'customresourcedefinitions')).toEqual([]);
    expect(verbsOn('boxyard.io', 'boxrepositories')).not.toContain('create');
    expect(verbsOn('boxyard.io', 'boxrepositories/status')).toContain('patch');
  });

  it('renders namespaced Roles instead of a ClusterRole when watchNamespaces is set', async () => {
    const { objects } = await renderChart(system, [`watchNamespaces={${teams.join(',')}}`]);
    expect(byKind(objects, 'ClusterRole')).toEqual([]);
    expect(byKind(objects, 'Role').map((r) => r.metadata.namespace).sort()).toEqual([system, ...teams].sort());
    expect(byKind(objects, 'RoleBinding').map((r) => r.metadata.namespace).sort()).toEqual([system, ...teams].sort());
    expect(args(objects)).toContain(`--namespaces=${teams.join(',')}`);
  });

  it('renders a ServiceMonitor only when asked', async () => {
    const { objects } = await renderChart(system, ['metrics.serviceMonitor.enabled=true']);
    expect(byKind(objects, 'ServiceMonitor')).toHaveLength(1);
  });

  it('refuses values its schema does not allow, naming them', async () => {
    await expect(renderChart(system, ['replicaCount=3', 'leaderElection.enabled=false'])).rejects.toThrow(/leaderElection\/enabled/);
    await expect(renderChart(system, ['replicaCount=-1'])).rejects.toThrow(/replicaCount/);
    await expect(renderChart(system, ['image.pullPolicy=Sometimes'])).rejects.toThrow(/pullPolicy/);
    await expect(renderChart(system, ['replicas=2'])).rejects.toThrow(/additional properties 'replicas' not allowed/);
  });

  it('keeps values.schema.json self-contained (helm would fetch remote $refs)', () => {
    const text = readFileSync(join(chartDir, 'values.schema.json'), 'utf8');
    const refs = [...text.matchAll(/"\$ref"\s*:\s*"([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThan(0);
    expect(refs.every((ref) => ref!.startsWith('#/'))).toBe(true);
  });

  it('is accepted by the real apiserver (kubectl apply --dry-run=server), CRDs included', async () => {
    for (const set of [[], [`watchNamespaces={${teams.join(',')}}`]]) {
      const { text } = await renderChart(system, set, ['--include-crds']);
      const out = await kubectl(kubeconfig, ['apply', '--dry-run=server', '-f', '-'], text);
      expect(out).toMatch(/deployment\.apps\/boxyard (created|configured) \(server dry run\)/);
      expect(out).toMatch(/customresourcedefinition\.apiextensions\.k8s\.io\/boxrepositories\.boxyard\.io .*\(server dry run\)/);
    }
  });
});

// The Helm chart, checked with the real helm (built from Go modules) and accepted by the real apiserver.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kinds } from '@boxyard/registry/kinds.ts';
import { backupKinds } from '../src/backups/crds.ts';
import { GATEWAY_RULES } from '../src/desired/rbac.ts';
import { chartDir, helm, installChartRbac, kubectl, renderChart, type RenderedObject } from './support.ts';
import { ignoreError } from '@boxyard/kit';

const kubeconfig = inject('kubeconfig');
const id = randomBytes(3).toString('hex');
const system = `boxyard-system-${id}`;
const teams = [`team-a-${id}`, `team-b-${id}`];

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
const byKind = (objects: RenderedObject[], kind: string) => objects.filter((o) => o.kind === kind);
const named = (objects: RenderedObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name) as unknown as { rules: Rule[]; metadata: { namespace?: string } } | undefined;
const args = (objects: RenderedObject[]) =>
  (byKind(objects, 'Deployment')[0] as unknown as { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!
    .args;

beforeAll(async () => {
  for (const ns of [system, ...teams]) await kubectl(kubeconfig, ['create', 'namespace', ns]);
});
afterAll(async () => {
  for (const ns of [system, ...teams])
    await kubectl(kubeconfig, ['delete', 'namespace', ns, '--wait=false']).catch(ignoreError('teardown: the namespace may be gone'));
});

describe('charts/boxyard', () => {
  it('passes helm lint --strict', async () => {
    expect(await helm(['lint', '--strict', chartDir])).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders two replicas with leader election, a ClusterRole, a metrics Service and a PodDisruptionBudget by default', async () => {
    const { objects } = await renderChart(system);
    expect(objects.map((o) => `${o.kind} ${o.metadata.name}`).sort()).toEqual([
      'ClusterRole boxyard',
      'ClusterRole boxyard-admin',
      'ClusterRole boxyard-edit',
      'ClusterRole boxyard-metrics-auth',
      'ClusterRole boxyard-metrics-reader',
      'ClusterRole boxyard-terminal-gateway',
      'ClusterRole boxyard-view',
      'ClusterRoleBinding boxyard',
      'ClusterRoleBinding boxyard-metrics-auth',
      'Deployment boxyard',
      'PodDisruptionBudget boxyard',
      'Role boxyard-leader-election',
      'RoleBinding boxyard-leader-election',
      'Service boxyard-metrics',
      'ServiceAccount boxyard',
      'ValidatingAdmissionPolicy boxyard-operator-writes',
      'ValidatingAdmissionPolicyBinding boxyard-operator-writes',
    ]);
    const deployment = byKind(objects, 'Deployment')[0] as unknown as { spec: { replicas: number } };
    expect(deployment.spec.replicas).toBe(2);
    expect(args(objects)).toEqual(
      expect.arrayContaining(['operator', '--leader-elect', '--leader-election-namespace=$(POD_NAMESPACE)', '--leader-election-id=boxyard']),
    );
    expect(args(objects).some((a) => a.startsWith('--namespaces'))).toBe(false);
    // The leader-election Role reaches only the operator's own Lease.
    const leaseRole = named(objects, 'Role', 'boxyard-leader-election')!;
    expect(leaseRole.metadata.namespace).toBe(system);
    expect(leaseRole.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['boxyard'], verbs: ['get', 'update'] },
    ]);
  });

  it('grants least privilege: no wildcards, Secrets never deleted, nothing beyond what the operator writes', async () => {
    const { objects } = await renderChart(system);
    const rules = named(objects, 'ClusterRole', 'boxyard')!.rules;
    for (const rule of rules) {
      expect(rule.verbs).not.toContain('*');
      expect(rule.resources).not.toContain('*');
      expect(rule.apiGroups).not.toContain('*');
      expect(rule.verbs).not.toContain('escalate');
    }
    const verbsOn = (group: string, resource: string) =>
      rules.filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource)).flatMap((r) => r.verbs);
    // `bind` on the gateway's ClusterRole alone; no pod rights and no Roles of its own to grant them.
    expect(rules.filter((r) => r.verbs.includes('bind'))).toEqual([
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: ['boxyard-terminal-gateway'], verbs: ['bind'] },
    ]);
    // Pods: list only, to read a finished backup Job's termination message (its result or its error).
    expect(verbsOn('', 'pods')).toEqual(['list']);
    expect(verbsOn('rbac.authorization.k8s.io', 'roles')).toEqual([]);
    expect(verbsOn('rbac.authorization.k8s.io', 'clusterrolebindings')).toEqual([]);
    // The gateway's ClusterRole is exactly what the operator's code says the gateway needs.
    expect(named(objects, 'ClusterRole', 'boxyard-terminal-gateway')!.rules).toEqual(GATEWAY_RULES);
    expect(args(objects)).toContain('--gateway-cluster-role=boxyard-terminal-gateway');
    expect(verbsOn('', 'secrets')).not.toContain('delete');
    expect(verbsOn('', 'nodes')).toEqual([]);
    expect(verbsOn('apiextensions.k8s.io', 'customresourcedefinitions')).toEqual([]);
    expect(verbsOn('boxyard.io', 'boxrepositories')).not.toContain('create');
    expect(verbsOn('boxyard.io', 'boxrepositories/status')).toContain('patch');
  });

  it('lets the operator reconcile every kind of the registry (the lists in _helpers.tpl are written by hand)', async () => {
    const { objects } = await renderChart(system);
    const rules = named(objects, 'ClusterRole', 'boxyard')!.rules;
    const verbsOn = (resource: string) =>
      rules
        .filter((r) => r.apiGroups.includes('boxyard.io') && r.resources.includes(resource))
        .flatMap((r) => r.verbs)
        .sort();
    for (const { plural } of kinds) {
      expect(verbsOn(plural), `${plural}: add it to boxyard.operatorRules`).toEqual(['get', 'list', 'patch', 'update', 'watch']);
      expect(verbsOn(`${plural}/status`), `${plural}/status`).toEqual(['get', 'patch', 'update']);
      expect(verbsOn(`${plural}/finalizers`), `${plural}/finalizers`).toEqual(['update']);
    }
    // Backups: ScheduledBackups create and prune Backups; the Backup controller writes their status.
    for (const { plural } of backupKinds) {
      expect(verbsOn(plural), plural).toEqual(['create', 'delete', 'get', 'list', 'watch']);
      expect(verbsOn(`${plural}/status`), `${plural}/status`).toEqual(['get', 'patch', 'update']);
    }
  });

  it('gives the people of a namespace view / edit / admin over every kind through the standard roles, never status writes', async () => {
    const { objects } = await renderChart(system);
    const aggregatedInto = (name: string) =>
      Object.entries(
        (objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === name)!.metadata as unknown as { labels: Record<string, string> }).labels,
      )
        .filter(([key, value]) => key.startsWith('rbac.authorization.k8s.io/aggregate-to-') && value === 'true')
        .map(([key]) => key.split('aggregate-to-')[1]);
    expect(['boxyard-view', 'boxyard-edit', 'boxyard-admin'].map(aggregatedInto)).toEqual([['view'], ['edit'], ['admin']]);
    const edit = named(objects, 'ClusterRole', 'boxyard-edit')!.rules;
    expect(edit[0]!.resources.sort(), 'every kind of the registry, and the backup kinds').toEqual(
      [...kinds.map((k) => k.plural), ...backupKinds.map((k) => k.plural)].sort(),
    );
    expect(edit.flatMap((r) => r.resources).filter((r) => r.endsWith('/status'))).toEqual([]);
    expect((await renderChart(system, ['rbac.userRoles=false'])).objects.filter((o) => /-(view|edit|admin)$/.test(o.metadata.name))).toEqual([]);

    // On the real apiserver, bound in one namespace (aggregation into Kubernetes' own roles needs the
    // controller-manager: the real-cluster suite checks `edit` itself).
    await installChartRbac(kubeconfig, system);
    const bind = (user: string, role: string) =>
      kubectl(kubeconfig, ['create', 'rolebinding', `${user}-${role}`, `--clusterrole=${role}`, `--user=${user}`, '-n', teams[0]!]);
    await bind('dev-editor', 'boxyard-edit');
    await bind('dev-editor', 'boxyard-view'); // as the aggregated edit role holds view's rules
    await bind('dev-viewer', 'boxyard-view');
    const canI = (user: string, namespace: string, ...what: string[]) =>
      kubectl(kubeconfig, ['auth', 'can-i', ...what, `--as=${user}`, '-n', namespace]).then(
        (out) => out.trim(),
        () => 'no',
      );
    for (const { plural } of [...kinds, ...backupKinds]) {
      expect(await canI('dev-editor', teams[0]!, 'create', `${plural}.boxyard.io`), plural).toBe('yes');
      expect(await canI('dev-editor', teams[0]!, 'patch', `${plural}.boxyard.io`), plural).toBe('yes');
      expect(await canI('dev-editor', teams[0]!, 'patch', `${plural}.boxyard.io`, '--subresource=status'), `${plural}/status`).toBe('no');
      expect(await canI('dev-editor', teams[1]!, 'create', `${plural}.boxyard.io`), `${plural} elsewhere`).toBe('no');
      expect(await canI('dev-viewer', teams[0]!, 'list', `${plural}.boxyard.io`), plural).toBe('yes');
      expect(await canI('dev-viewer', teams[0]!, 'delete', `${plural}.boxyard.io`), plural).toBe('no');
    }
  });

  it('renders namespaced Roles instead of a ClusterRole when watchNamespaces is set', async () => {
    const { objects } = await renderChart(system, [`watchNamespaces={${teams.join(',')}}`]);
    // Only the cluster-scoped roles that are not the operator's own: the gateway's (bound per namespace), metrics and the users'.
    expect(
      byKind(objects, 'ClusterRole')
        .map((r) => r.metadata.name)
        .sort(),
    ).toEqual(['boxyard-admin', 'boxyard-edit', 'boxyard-metrics-auth', 'boxyard-metrics-reader', 'boxyard-terminal-gateway', 'boxyard-view']);
    expect(byKind(objects, 'ClusterRoleBinding').map((r) => r.metadata.name)).toEqual(['boxyard-metrics-auth']);
    expect(
      byKind(objects, 'Role')
        .map((r) => r.metadata.namespace)
        .sort(),
    ).toEqual([system, ...teams].sort());
    expect(
      byKind(objects, 'RoleBinding')
        .map((r) => r.metadata.namespace)
        .sort(),
    ).toEqual([system, ...teams].sort());
    expect(args(objects)).toContain(`--namespaces=${teams.join(',')}`);
  });

  it("renders a ServiceMonitor only when asked, sending Prometheus's token to the authenticated /metrics", async () => {
    const { objects } = await renderChart(system, ['metrics.serviceMonitor.enabled=true']);
    expect(byKind(objects, 'ServiceMonitor')).toHaveLength(1);
    expect(JSON.stringify(byKind(objects, 'ServiceMonitor')[0])).toContain('"bearerTokenFile":"/var/run/secrets/kubernetes.io/serviceaccount/token"');
  });

  it('authenticates /metrics by default, binds the listed readers, and can turn it off', async () => {
    const { objects } = await renderChart(system, ['metrics.readers[0].name=prometheus', 'metrics.readers[0].namespace=monitoring']);
    expect(args(objects)).toContain('--metrics-auth=kubernetes');
    expect(named(objects, 'ClusterRole', 'boxyard-metrics-auth')!.rules).toEqual([
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ]);
    expect(named(objects, 'ClusterRole', 'boxyard-metrics-reader')!.rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    expect(
      (objects.find((o) => o.metadata.name === 'boxyard-metrics-reader' && o.kind === 'ClusterRoleBinding') as unknown as { subjects: unknown[] }).subjects,
    ).toEqual([{ kind: 'ServiceAccount', name: 'prometheus', namespace: 'monitoring' }]);
    const open = await renderChart(system, ['metrics.authentication.enabled=false']);
    expect(args(open.objects)).toContain('--metrics-auth=none');
    expect(open.objects.filter((o) => o.metadata.name.startsWith('boxyard-metrics-') && o.kind.startsWith('Cluster'))).toEqual([]);
  });

  it('sets OTEL_* on the operator only when tracing has an endpoint (the operator passes them on to service pods)', async () => {
    const env = (objects: RenderedObject[]) =>
      (byKind(objects, 'Deployment')[0] as unknown as { spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } }).spec
        .template.spec.containers[0]!.env;
    expect(env((await renderChart(system)).objects).filter((e) => e.name.startsWith('OTEL_'))).toEqual([]);
    const traced = env((await renderChart(system, ['tracing.otlpEndpoint=http://otel-collector.observability:4318', 'tracing.sampleRatio=0.1'])).objects);
    expect(Object.fromEntries(traced.filter((e) => e.name.startsWith('OTEL_')).map((e) => [e.name, e.value]))).toMatchObject({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_SERVICE_NAME: 'boxyard-operator',
    });
    await expect(renderChart(system, ['tracing.otlpEndpoint=otel:4318'])).rejects.toThrow(/otlpEndpoint/);
    await expect(renderChart(system, ['tracing.sampleRatio=2'])).rejects.toThrow(/sampleRatio/);
  });

  it("passes the image allow-list: the chart's repository by default, else allowedImages", async () => {
    expect(args((await renderChart(system)).objects)).toContain('--allowed-images=ghcr.io/boxyard/boxyard');
    expect(args((await renderChart(system, ['image.repository=registry.example/boxyard'])).objects)).toContain('--allowed-images=registry.example/boxyard');
    expect(args((await renderChart(system, ['allowedImages={registry.example/boxyard,registry.example/shells/*}'])).objects)).toContain(
      '--allowed-images=registry.example/boxyard,registry.example/shells/*',
    );
    await expect(renderChart(system, ['allowedImages={a b}'])).rejects.toThrow(/allowedImages/);
  });

  it('lets the real apiserver accept the gateway binding from the operator, and nothing wider (RBAC escalation check)', async () => {
    for (const [label, set] of [
      ['cluster-wide', []],
      ['watchNamespaces', [`watchNamespaces={${teams.join(',')}}`]],
    ] as const) {
      const user = await installChartRbac(kubeconfig, system, [...set]);
      const as = [`--as=${user}`, '-n', teams[0]!];
      const binding = (name: string, role: string) =>
        JSON.stringify({
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name, namespace: teams[0], labels: { 'app.kubernetes.io/managed-by': 'boxyard-operator' } },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
          subjects: [{ kind: 'ServiceAccount', name: 'shells-terminal', namespace: teams[0] }],
        });
      // The operator holds no pod rights itself, yet may grant the gateway's.
      // `kubectl auth can-i` exits 1 for "no".
      const canI = (...what: string[]) =>
        kubectl(kubeconfig, ['auth', 'can-i', ...what, ...as]).then(
          (out) => out.trim(),
          () => 'no',
        );
      expect(await canI('create', 'pods'), label).toBe('no');
      expect(await canI('bind', 'clusterroles/boxyard-terminal-gateway'), label).toBe('yes');
      expect(await canI('bind', 'clusterroles/cluster-admin'), label).toBe('no');
      expect(
        await kubectl(kubeconfig, ['apply', '--server-side', ...as, '-f', '-'], binding('shells-terminal-gateway', 'boxyard-terminal-gateway')),
        label,
      ).toMatch(/serverside-applied/);
      await kubectl(kubeconfig, ['delete', 'rolebinding', '-n', teams[0]!, 'shells-terminal-gateway']);
      // Any other ClusterRole is refused: the apiserver's escalation check (it holds neither the rights nor `bind`).
      // (cluster-admin: `admin` and `edit` are empty here, with no controller-manager to aggregate them.)
      await expect(
        kubectl(kubeconfig, ['apply', '--server-side', ...as, '-f', '-'], binding('shells-terminal-gateway', 'cluster-admin')),
        label,
      ).rejects.toThrow(/forbidden: user .* is attempting to grant RBAC permissions not currently held/);
    }
  });

  it('proves least privilege with kubectl auth can-i and the real apiserver: no self-grant of pod rights, Secrets only where it works', async () => {
    const sa = (name: string, ns = teams[0]!) => `system:serviceaccount:${ns}:${name}`;
    for (const [label, set] of [
      ['cluster-wide', []],
      ['watchNamespaces', [`watchNamespaces={${teams[0]}}`]],
    ] as const) {
      if (label === 'watchNamespaces') {
        // As `helm upgrade` would: the cluster-wide binding and the other namespace's Role go (earlier tests made them).
        await kubectl(kubeconfig, ['delete', 'clusterrolebinding', 'boxyard', '--ignore-not-found']);
        await kubectl(kubeconfig, ['delete', 'rolebinding', 'boxyard', '-n', teams[1]!, '--ignore-not-found']);
      }
      const user = await installChartRbac(kubeconfig, system, [...set]);
      const canI = (as: string, ...what: string[]) =>
        kubectl(kubeconfig, ['auth', 'can-i', ...what, `--as=${as}`]).then(
          (out) => out.trim(),
          () => 'no',
        );
      // What it needs, where it works.
      for (const [verb, resource] of [
        ['get', 'secrets'],
        ['create', 'secrets'],
        ['create', 'deployments.apps'],
        ['create', 'rolebindings.rbac.authorization.k8s.io'],
      ]) {
        expect(await canI(user, verb!, resource!, '-n', teams[0]!), `${label}: ${verb} ${resource}`).toBe('yes');
      }
      // Nothing it does not use: pods, Secret deletion, RBAC roles.
      for (const what of [
        ['create', 'pods'],
        ['patch', 'pods'],
        ['delete', 'secrets'],
        ['create', 'roles.rbac.authorization.k8s.io'],
        ['escalate', 'clusterroles.rbac.authorization.k8s.io'],
        ['create', 'serviceaccounts', '--subresource=token'],
      ]) {
        expect(await canI(user, ...what, '-n', teams[0]!), `${label}: ${what.join(' ')}`).toBe('no');
      }
      // Secrets of namespaces it does not manage stay unreadable when it is told which it manages.
      expect(await canI(user, 'get', 'secrets', '-n', teams[1]!), label).toBe(label === 'watchNamespaces' ? 'no' : 'yes');
      expect(await canI(user, 'list', 'secrets', '-n', 'kube-system'), label).toBe(label === 'watchNamespaces' ? 'no' : 'yes');

      // The gateway's ClusterRole: exactly the verbs the gateway calls (no pod patch, no list or watch).
      await kubectl(kubeconfig, ['create', 'serviceaccount', 'shells-terminal', '-n', teams[0]!]).catch(ignoreError('the service account may exist already'));
      const gateway = (name: string, subject: Record<string, string>, role = 'boxyard-terminal-gateway') =>
        JSON.stringify({
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name, namespace: teams[0], labels: { 'app.kubernetes.io/managed-by': 'boxyard-operator' } },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
          subjects: [subject],
        });
      const asOperator = ['--as', user, '-n', teams[0]!];
      const create = (manifest: string) => kubectl(kubeconfig, ['create', ...asOperator, '-f', '-'], manifest);
      await create(gateway('shells-terminal-gateway', { kind: 'ServiceAccount', name: 'shells-terminal', namespace: teams[0]! }));
      const gatewayUser = sa('shells-terminal');
      expect(await canI(gatewayUser, 'create', 'pods', '-n', teams[0]!), label).toBe('yes');
      expect(await canI(gatewayUser, 'delete', 'pods', '-n', teams[0]!), label).toBe('yes');
      // Watch: it waits for its session pod's readiness with a watch (it could get each pod already).
      expect(await canI(gatewayUser, 'watch', 'pods', '-n', teams[0]!), label).toBe('yes');
      expect(await canI(gatewayUser, 'patch', 'pods', '-n', teams[0]!), label).toBe('no');
      expect(await canI(gatewayUser, 'list', 'pods', '-n', teams[0]!), label).toBe('no');
      expect(await canI(gatewayUser, 'create', 'pods', '-n', teams[1]!), label).toBe('no');
      expect(await canI(gatewayUser, 'get', 'secrets', '-n', teams[0]!), label).toBe('no');
      await kubectl(kubeconfig, ['delete', 'rolebinding', 'shells-terminal-gateway', ...asOperator]);

      // `bind` on the gateway's role cannot be turned on the operator itself, a group, or another namespace's account.
      const refused = /denied request: .*only binds the terminal gateway's ClusterRole to the pool's own ServiceAccount/;
      const account = user.split(':');
      await expect(create(gateway('own-terminal-gateway', { kind: 'ServiceAccount', name: account[3]!, namespace: account[2]! })), label).rejects.toThrow(
        refused,
      );
      await expect(
        create(
          gateway('x-terminal-gateway', { kind: 'Group', name: 'system:serviceaccounts', apiGroup: 'rbac.authorization.k8s.io' } as unknown as Record<
            string,
            string
          >),
        ),
        label,
      ).rejects.toThrow(refused);
      await expect(create(gateway('x-terminal-gateway', { kind: 'ServiceAccount', name: 'x-terminal', namespace: teams[1]! })), label).rejects.toThrow(refused);
      // Nor can it mint a token through a Secret, or change or delete RoleBindings and Secrets it did not generate.
      await expect(
        create(
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Secret',
            type: 'kubernetes.io/service-account-token',
            metadata: {
              name: `token-${id}`,
              annotations: { 'kubernetes.io/service-account.name': 'shells-terminal' },
              labels: { 'app.kubernetes.io/managed-by': 'boxyard-operator' },
            },
          }),
        ),
        label,
      ).rejects.toThrow(/denied request: .*Opaque/);
      await kubectl(kubeconfig, ['create', 'rolebinding', `theirs-${id}`, '--clusterrole=view', `--serviceaccount=${teams[0]}:default`, '-n', teams[0]!]);
      await expect(kubectl(kubeconfig, ['delete', 'rolebinding', `theirs-${id}`, ...asOperator]), label).rejects.toThrow(/denied request: .*generated/);
      await kubectl(kubeconfig, ['delete', 'rolebinding', `theirs-${id}`, '-n', teams[0]!]);
    }
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

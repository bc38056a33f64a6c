// Persistent homes on the Kubernetes backend: the claim and the pod spec as rendered, and the backend creating one
// claim per user on the shared local apiserver (no kubelet: the pods never get ready, which is not what is tested
// here; the real node's suite runs a file across two session pods).
import { randomBytes } from 'node:crypto';
import type { PersistentVolumeClaim } from 'kubernetes-types/core/v1.d.ts';
import { KubeClient } from '@boxyard/kit/kube/client.ts';
import { kubeconfigCredentials } from '@boxyard/kit/kube/credentials.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { backendSchema, sessionsSchema } from '../config.ts';
import { createKubernetesBackend, homeClaim, homeClaimName, sessionPod } from './kubernetes.ts';
import type { AgentSpec } from './types.ts';
import { ignoreError } from '@boxyard/kit';

const spec = (ownerId: string, ownerName = 'alice'): AgentSpec => ({
  sessionId: crypto.randomUUID(),
  ownerId,
  ownerName,
  agentKey: 'k'.repeat(43),
  gatewayPublicKey: 'g'.repeat(43),
  expiresAt: Date.now() + 3_600_000,
  idleTimeoutSeconds: 600,
  reattachGraceSeconds: 60,
  scrollbackBytes: 65_536,
});

const kubernetesConfig = (kubernetes: Record<string, unknown>) =>
  backendSchema.parse({ kind: 'kubernetes', kubernetes: { image: 'boxyard:test', ...kubernetes } }).kubernetes!;

describe('persistent homes: rendering', () => {
  const owner = '3f2a9c01-d4e5-4a6b-8c7d-0123456789ab';

  it('renders one claim per pool and user, labelled with both, of the configured size and class', () => {
    const config = kubernetesConfig({ pool: 'shells', home: { size: '2Gi', storage_class: 'local-path' } });
    expect(homeClaimName(config, owner)).toBe(`boxyard-home-shells-${owner}`);
    expect(homeClaim({ spec: spec(owner), config, namespace: 'ns' })).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: `boxyard-home-shells-${owner}`,
        namespace: 'ns',
        labels: {
          'app.kubernetes.io/managed-by': 'boxyard',
          'app.kubernetes.io/component': 'terminal-home',
          'boxyard.io/pool': 'shells',
          'boxyard.io/owner': owner,
        },
        annotations: { 'boxyard.io/owner-username': 'alice' },
      },
      spec: { accessModes: ['ReadWriteOnce'], volumeMode: 'Filesystem', resources: { requests: { storage: '2Gi' } }, storageClassName: 'local-path' },
    });
    // No class: the cluster's default StorageClass.
    expect(homeClaim({ spec: spec(owner), config: kubernetesConfig({ home: { size: '1Gi' } }), namespace: 'ns' }).spec).not.toHaveProperty('storageClassName');
  });

  it('mounts the claim as the home of every session pod of the user, group-owned by the shell, on one node with ReadWriteOnce', () => {
    const config = kubernetesConfig({ pool: 'shells', home: { size: '1Gi' } });
    const pod = sessionPod({ spec: spec(owner), config, namespace: 'ns', sessions: { max_lifetime_seconds: 3600 } });
    expect(pod.spec!.volumes).toEqual([{ name: 'home', persistentVolumeClaim: { claimName: `boxyard-home-shells-${owner}` } }]);
    const container = pod.spec!.containers[0]!;
    expect(container.volumeMounts).toEqual([{ name: 'home', mountPath: '/home/user' }]);
    expect(container.env).toContainEqual({ name: 'BOXYARD_AGENT_HOME', value: '/home/user' });
    expect(pod.spec!.securityContext).toMatchObject({ fsGroup: 1000, fsGroupChangePolicy: 'OnRootMismatch', runAsUser: 0 });
    expect(pod.spec!.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution).toEqual([
      {
        labelSelector: {
          matchLabels: expect.objectContaining({ 'boxyard.io/owner': owner, 'boxyard.io/pool': 'shells', 'app.kubernetes.io/component': 'terminal-session' }),
        },
        topologyKey: 'kubernetes.io/hostname',
      },
    ]);
    // The pod's own labels match its affinity term (so the user's first pod may go anywhere).
    expect(pod.metadata!.labels).toMatchObject(
      pod.spec!.affinity!.podAffinity!.requiredDuringSchedulingIgnoredDuringExecution![0]!.labelSelector!.matchLabels!,
    );
    // ReadWriteMany: no affinity needed; a custom mount path.
    const shared = sessionPod({
      spec: spec(owner),
      config: kubernetesConfig({ home: { size: '1Gi', access_mode: 'ReadWriteMany', mount_path: '/workspace' } }),
      namespace: 'ns',
      sessions: { max_lifetime_seconds: 3600 },
    });
    expect(shared.spec!.affinity).toBeUndefined();
    expect(shared.spec!.containers[0]!.volumeMounts).toEqual([{ name: 'home', mountPath: '/workspace' }]);
  });

  it('leaves the pod without volumes when no home is configured; refuses bad sizes and paths', () => {
    const pod = sessionPod({ spec: spec(owner), config: kubernetesConfig({}), namespace: 'ns', sessions: { max_lifetime_seconds: 3600 } });
    expect(pod.spec!.volumes).toBeUndefined();
    expect(pod.spec!.securityContext).not.toHaveProperty('fsGroup');
    expect(pod.spec!.containers[0]!.env!.map((e) => e.name)).not.toContain('BOXYARD_AGENT_HOME');
    expect(() => kubernetesConfig({ home: { size: 'lots' } })).toThrow(/quantity/);
    expect(() => kubernetesConfig({ home: { size: '1Gi', mount_path: '../etc' } })).toThrow(/absolute path/);
    expect(() => kubernetesConfig({ home: { size: '1Gi', storage_class: 'Bad Class' } })).toThrow(/StorageClass/);
  });
});

describe('persistent homes: claims on the local control plane', () => {
  const kubeconfig = inject('kubeconfig');
  const namespace = `terminal-home-${randomBytes(4).toString('hex')}`;
  let client: KubeClient;

  beforeAll(async () => {
    client = new KubeClient(kubeconfigCredentials(kubeconfig), { fieldManager: 'boxyard-test' });
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  });
  afterAll(async () => {
    await client?.delete(resources.namespace, undefined, namespace).catch(ignoreError('teardown: the namespace may be gone with the run'));
    client?.close();
  });

  it("creates the user's claim at their first session, reuses it for the next, and gives another user their own", async () => {
    const config = kubernetesConfig({
      namespace,
      kubeconfig,
      pool: 'p1',
      network_policy: false,
      pod_ready_timeout_seconds: 1,
      home: { size: '1Gi', storage_class: 'local-path' },
    });
    const backend = createKubernetesBackend({ config, sessions: sessionsSchema.parse({}), log: { info() {}, warn() {} } });
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    // No kubelet here: each start creates claim and pod, then gives up waiting for the pod (and deletes it).
    for (const owner of [alice, alice, bob])
      await expect(backend.start(spec(owner, owner === alice ? 'alice' : 'bob'))).rejects.toThrow(/not ready within 1 s/);
    const claims = await client.list<KubeObject & PersistentVolumeClaim>(resources.persistentVolumeClaim, namespace, {
      labelSelector: 'app.kubernetes.io/component=terminal-home',
    });
    expect(claims.items.map((c) => c.metadata.name).sort()).toEqual([`boxyard-home-p1-${alice}`, `boxyard-home-p1-${bob}`].sort());
    const aliceClaim = claims.items.find((c) => c.metadata.labels!['boxyard.io/owner'] === alice)!;
    expect(aliceClaim.spec).toMatchObject({ accessModes: ['ReadWriteOnce'], storageClassName: 'local-path', resources: { requests: { storage: '1Gi' } } });
    // Nothing owns it: deleting pods (or the pool) leaves it.
    expect(aliceClaim.metadata.ownerReferences ?? []).toEqual([]);
    await backend.close();
  });
});

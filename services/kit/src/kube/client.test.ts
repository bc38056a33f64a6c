// The kit's Kubernetes client against the harness's kube-apiserver, for what the terminal's pod backend asks of it
// beyond the operator's use (which operator/src/runtime/informer.test.ts and operator/test cover): its own field
// manager, a JSON patch that replaces a whole spec, a watch of one object by field selector, a delete's grace period.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KubeClient, isNotFound } from './client.ts';
import { kubeconfigCredentials } from './credentials.ts';
import { resources } from './resources.ts';
import type { KubeObject, WatchEvent } from './types.ts';

const namespace = `kube-client-${randomBytes(4).toString('hex')}`;
let client: KubeClient;

const pod = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace, labels: { app: 'kube-client-test' } },
  // Bound to a node that never runs it: deleting it then waits for a kubelet, unless the grace period is 0.
  spec: { nodeName: 'no-kubelet', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', image: 'registry.example/none:1' }] },
});

beforeAll(async () => {
  client = new KubeClient(kubeconfigCredentials(inject('kubeconfig')), { fieldManager: 'boxyard-terminal' });
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
});

afterAll(async () => {
  await client.delete(resources.namespace, undefined, namespace);
  client.close();
});

describe('the kit Kubernetes client', () => {
  it('writes under the field manager it is given', async () => {
    const created = await client.create<KubeObject>(pod('managed'));
    const managers = (created.metadata.managedFields as { manager: string }[]).map((m) => m.manager);
    expect(managers).toEqual(['boxyard-terminal']);
  });

  it('replaces a whole spec with a JSON patch, so no key of the old one survives', async () => {
    const policy = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'fence', namespace },
      spec: {
        podSelector: { matchLabels: { app: 'a', stale: 'yes' } },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'gw' } } }] }],
      },
    };
    await client.create(policy);
    const spec = {
      podSelector: { matchLabels: { app: 'a' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'gw2' } } }] }],
    };
    await client.jsonPatch(resources.networkPolicy, namespace, 'fence', [{ op: 'replace', path: '/spec', value: spec }]);
    expect((await client.get(resources.networkPolicy, namespace, 'fence'))?.spec).toEqual(spec);
    await expect(client.jsonPatch(resources.networkPolicy, namespace, 'absent', [{ op: 'replace', path: '/spec', value: spec }])).rejects.toSatisfy(isNotFound);
  });

  it('watches one object by field selector from a resourceVersion, and deletes with a grace period', async () => {
    const watched = await client.create<KubeObject>(pod('watched'));
    await client.create(pod('other'));
    const events: WatchEvent[] = [];
    const stop = new AbortController();
    const watching = client.watch(
      resources.pod,
      namespace,
      { fieldSelector: 'metadata.name=watched', resourceVersion: watched.metadata.resourceVersion, timeoutSeconds: 30 },
      (event) => {
        events.push(event);
        if (event.type === 'DELETED') stop.abort();
      },
      stop.signal,
    );
    await client.mergePatch(resources.pod, namespace, 'other', { metadata: { labels: { touched: 'yes' } } });
    await client.mergePatch(resources.pod, namespace, 'watched', { metadata: { labels: { touched: 'yes' } } });
    // No kubelet here: a pod with a grace period stays (terminating) until it ends; 0 removes it at once.
    expect(await client.delete(resources.pod, namespace, 'other')).toBe(true);
    expect((await client.get(resources.pod, namespace, 'other'))?.metadata.deletionTimestamp).toBeTruthy();
    expect(await client.delete(resources.pod, namespace, 'watched', { gracePeriodSeconds: 0 })).toBe(true);
    await watching;
    // Only the watched pod; its label change first, its deletion last (a bound pod is marked deleting on the way).
    expect(new Set(events.map((e) => (e.object as KubeObject).metadata.name))).toEqual(new Set(['watched']));
    expect(events[0]).toMatchObject({ type: 'MODIFIED', object: { metadata: { labels: { touched: 'yes' } } } });
    expect(events.at(-1)?.type).toBe('DELETED');
    expect(await client.get(resources.pod, namespace, 'watched')).toBeUndefined();
    expect(await client.delete(resources.pod, namespace, 'watched')).toBe(false);
  });
});

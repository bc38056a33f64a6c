// The informer against the real apiserver: list then watch, label selectors, periodic resync, metadata-only
// caching of Secrets, and secondary indexes. Reconnecting after an apiserver restart and relisting after the
// 410 Gone that follows are tested on a control plane of their own in operator/test/resilience.test.ts.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KubeClient } from '@boxyard/kit/kube/client.ts';
import { kubeconfigCredentials } from '@boxyard/kit/kube/credentials.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { Informer, type InformerEventType } from './informer.ts';

const namespace = `informer-${randomBytes(4).toString('hex')}`;
let client: KubeClient;
const informers: Informer[] = [];

const configMap = (name: string, data: Record<string, string>, labels = { app: 'informer-test' }): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, labels },
  data,
});

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  client = new KubeClient(kubeconfigCredentials(inject('kubeconfig')));
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await client.create(configMap('first', { v: '1' }));
  await client.create(configMap('unlabelled', { v: '1' }, { app: 'other' }));
});

afterAll(async () => {
  await Promise.all(informers.map((i) => i.stop()));
  await client.delete(resources.namespace, undefined, namespace);
  client.close();
});

describe('informer', () => {
  it('lists, then follows changes, and replays its cache on every resync', async () => {
    const events: [InformerEventType, string][] = [];
    const informer = new Informer(client, { type: resources.configMap, namespaces: [namespace], labelSelector: 'app=informer-test', resyncMs: 300 });
    informers.push(informer);
    informer.addHandler((type, object) => events.push([type, object.metadata.name]));
    informer.start();
    await informer.synced;
    expect(informer.hasSynced()).toBe(true);
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['first']); // the selector leaves 'unlabelled' out
    expect(events[0]).toEqual(['add', 'first']);
    expect(informer.get(namespace, 'first')?.metadata).not.toHaveProperty('managedFields'); // not kept in memory

    await client.create(configMap('second', { v: '1' }));
    await client.mergePatch(resources.configMap, namespace, 'first', { data: { v: '2' } });
    await client.mergePatch(resources.configMap, namespace, 'unlabelled', { data: { v: '2' } });
    await until(
      'the watch to deliver',
      () => (informer.get(namespace, 'first')?.data as { v: string } | undefined)?.v === '2' && !!informer.get(namespace, 'second'),
    );
    await client.delete(resources.configMap, namespace, 'second');
    await until('the deletion', () => !informer.get(namespace, 'second'));
    expect(events).toContainEqual(['add', 'second']);
    expect(events).toContainEqual(['update', 'first']);
    expect(events).toContainEqual(['delete', 'second']);
    expect(events.some(([, name]) => name === 'unlabelled')).toBe(false);
    await until('two resyncs', () => events.filter(([type, name]) => type === 'resync' && name === 'first').length >= 2);
  });

  it('syncs on an empty metadata-only list (the apiserver sends items: null)', async () => {
    const empty = `informer-empty-${randomBytes(4).toString('hex')}`;
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: empty } });
    try {
      const informer = new Informer(client, { type: resources.secret, namespaces: [empty], metadataOnly: true });
      informers.push(informer);
      informer.start();
      await informer.synced;
      expect(informer.list()).toEqual([]);
    } finally {
      await client.delete(resources.namespace, undefined, empty);
    }
  });

  it('caches only the metadata of Secrets, and indexes objects', async () => {
    await client.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db', namespace, labels: { team: 'a' } },
      stringData: { url: 'postgres://u:p@h/d' },
    });
    const informer = new Informer(client, { type: resources.secret, namespaces: [namespace], metadataOnly: true });
    informers.push(informer);
    informer.addIndex('team', (o) => (o.metadata.labels?.team ? [o.metadata.labels.team] : []));
    informer.start();
    await informer.synced;
    const secret = informer.get(namespace, 'db')!;
    expect(secret.metadata.resourceVersion).toBeTruthy();
    expect(secret.kind).toBe('Secret');
    expect(secret).not.toHaveProperty('data');
    expect(secret).not.toHaveProperty('stringData');
    expect(informer.byIndex('team', 'a').map((o) => o.metadata.name)).toEqual(['db']);
    await client.mergePatch(resources.secret, namespace, 'db', { metadata: { labels: { team: 'b' } } });
    await until('the index to follow the change', () => informer.byIndex('team', 'b').length === 1);
    expect(informer.byIndex('team', 'a')).toEqual([]);
  });
});

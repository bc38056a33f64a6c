// A failed reconcile is logged as controller-runtime logs it — one JSON record, level error, with controller,
// namespace, name and reconcileID — so `jq 'select(.reconcileID == "…")'` or a Loki query finds one reconcile's
// lines; every retry is a new reconcileID. Against the real apiserver, with an informer on ConfigMaps.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KubeClient } from '@boxyard/kit/kube/client.ts';
import { kubeconfigCredentials } from '@boxyard/kit/kube/credentials.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import { Controller } from './controller.ts';
import { Informer } from './informer.ts';
import { createOperatorLogger } from './logger.ts';
import { RateLimiter } from './queue.ts';

const namespace = `ctrl-log-${randomBytes(4).toString('hex')}`;
let client: KubeClient;

beforeAll(async () => {
  client = new KubeClient(kubeconfigCredentials(inject('kubeconfig')));
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'broken', namespace }, data: {} });
});

afterAll(async () => {
  await client.delete(resources.namespace, undefined, namespace);
  client.close();
});

describe('controller logs', () => {
  it('a failed reconcile: one error record with controller, namespace, name, reconcileID and the error; a new reconcileID per try', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(...chunk.toString().trim().split('\n')), done()) });
    const informer = new Informer(client, { type: resources.configMap, namespaces: [namespace] });
    const controller = new Controller({
      name: 'configmaps',
      primary: informer,
      reconcile: async () => {
        throw new Error('the Secret "db" has no key "url"');
      },
      limiter: new RateLimiter(),
      logger: createOperatorLogger({ stream: sink }),
    });
    informer.start();
    await informer.synced;
    await controller.start();
    try {
      const deadline = Date.now() + 20_000;
      while (lines.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await controller.stop();
      await informer.stop();
    }
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines[0]!.match(/"name":/g)).toHaveLength(1); // the object's name, not also the logger's
    const [first, second] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(first).toMatchObject({
      level: 50,
      logger: 'boxyard-operator',
      name: 'broken',
      namespace,
      controller: 'configmaps',
      msg: 'Reconciler error',
      error: 'the Secret "db" has no key "url"',
      reconcileID: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(typeof first!.retryInMs).toBe('number');
    expect(new Date(first!.time as string).toISOString()).toBe(first!.time); // ISO time, as log pipelines parse it
    expect(second!.reconcileID).not.toBe(first!.reconcileID);
  });
});

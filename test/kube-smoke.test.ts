// The local control plane is a real Kubernetes API: CRDs, custom objects through Boxyard's client (kit/kube), RBAC.
// The second block starts its own plane with controllers + kwok and waits for a Deployment to become Available.
import { execFile } from 'node:child_process';
import { request } from 'node:https';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeClient } from '@boxyard/kit/kube/client.ts';
import { kubeconfigCredentials } from '@boxyard/kit/kube/credentials.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startControlPlane, type RunningControlPlane } from './harness/kube.ts';
import { tool } from './harness/tools.ts';
import { ignoreError } from '@boxyard/kit';

const run = promisify(execFile);

/** Runs the pinned kubectl against `kubeconfig`; YAML on stdin when given. */
async function kubectl(kubeconfig: string, args: string[], stdin?: string): Promise<string> {
  const child = run(tool('KUBECTL'), [`--kubeconfig=${kubeconfig}`, ...args]);
  if (stdin !== undefined) child.child.stdin?.end(stdin);
  return (await child).stdout;
}

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.boxyard.io
spec:
  group: smoke.boxyard.io
  scope: Namespaced
  names: { kind: Widget, plural: widgets, singular: widget, listKind: WidgetList }
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: { type: integer, minimum: 0 }
`;

describe('local control plane (shared, apiserver only)', () => {
  const kubeconfig = inject('kubeconfig');
  const namespace = `smoke-${randomBytes(4).toString('hex')}`;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kube-smoke-'));
  });
  afterAll(async () => {
    // No garbage collector without controllers: deleting the namespace only marks it; that's fine for a throwaway plane.
    await kubectl(kubeconfig, ['delete', 'namespace', namespace, '--wait=false', '--ignore-not-found']).catch(
      ignoreError('teardown: the namespace may be gone'),
    );
    await rm(dir, { recursive: true, force: true });
  });

  it("serves a CRD whose objects round-trip through Boxyard's Kubernetes client", async () => {
    const crdFile = join(dir, 'crd.yaml');
    await writeFile(crdFile, CRD);
    await kubectl(kubeconfig, ['apply', '-f', crdFile]);
    await kubectl(kubeconfig, ['wait', '--for=condition=Established', '--timeout=30s', 'crd/widgets.smoke.boxyard.io']);

    await kubectl(kubeconfig, ['create', 'namespace', namespace]);
    const widget = `apiVersion: smoke.boxyard.io/v1\nkind: Widget\nmetadata: { name: w1, namespace: ${namespace} }\nspec: { size: 42 }\n`;
    const widgetFile = join(dir, 'widget.yaml');
    await writeFile(widgetFile, widget);
    await kubectl(kubeconfig, ['apply', '-f', widgetFile]);

    const client = new KubeClient(kubeconfigCredentials(kubeconfig));
    const widgets = { group: 'smoke.boxyard.io', version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true };
    const read = await client.get<KubeObject & { spec?: { size?: unknown } }>(widgets, namespace, 'w1');
    client.close();
    expect(read?.spec?.size).toBe(42);

    // The structural schema is enforced: a string size is rejected by the apiserver.
    await expect(kubectl(kubeconfig, ['apply', '-f', '-'], widget.replace('size: 42', 'size: "big"'))).rejects.toThrow(/size/);
  });

  it('authorizes with RBAC: an identity without bindings is refused', async () => {
    expect((await kubectl(kubeconfig, ['auth', 'can-i', 'create', 'pods', '--as=nobody']).catch((e: { stdout: string }) => e.stdout)).trim()).toBe('no');
    expect((await kubectl(kubeconfig, ['auth', 'can-i', 'create', 'pods'])).trim()).toBe('yes');
    // A real request, not just the review API: impersonating `nobody` gets 403 Forbidden.
    await expect(kubectl(kubeconfig, ['get', 'pods', '-n', 'default', '--as=nobody'])).rejects.toThrow(/forbidden/i);
    // And no client certificate at all: anonymous is not allowed to list namespaces.
    const server = (await kubectl(kubeconfig, ['config', 'view', '--minify', '-o', 'jsonpath={.clusters[0].cluster.server}'])).trim();
    const anonymous = await anonymousGet(`${server}/api/v1/namespaces`, kubeconfigCredentials(kubeconfig).tls.ca);
    expect([401, 403]).toContain(anonymous);
  });
});

/** GET with the cluster CA but no client certificate; resolves with the HTTP status. */
async function anonymousGet(url: string, ca: Buffer | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('local control plane with controllers and kwok', { timeout: 180_000 }, () => {
  let plane: RunningControlPlane;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kube-controllers-'));
    const started = Date.now();
    plane = await startControlPlane({ dir, controllers: true });
    console.log(`[kube-smoke] control plane with controllers up in ${Date.now() - started} ms`);
  }, 120_000);
  afterAll(async () => {
    await plane?.stop();
    await rm(dir, { recursive: true, force: true });
  }, 30_000);

  it('rolls out a Deployment to Available on the kwok node', async () => {
    const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: default }
spec:
  replicas: 1
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers:
      - { name: web, image: registry.invalid/web:1 }
`;
    const started = Date.now();
    await kubectl(plane.kubeconfig, ['apply', '-f', '-'], deployment);
    await kubectl(plane.kubeconfig, ['wait', '--for=condition=Available', '--timeout=90s', 'deployment/web', '-n', 'default']);
    console.log(`[kube-smoke] Deployment Available in ${Date.now() - started} ms`);
    const pods = JSON.parse(await kubectl(plane.kubeconfig, ['get', 'pods', '-n', 'default', '-l', 'app=web', '-o', 'json'])) as {
      items: { spec: { nodeName?: string }; status: { phase?: string } }[];
    };
    expect(pods.items.map((p) => [p.spec.nodeName, p.status.phase])).toEqual([['kwok-node-0', 'Running']]);
  });
});

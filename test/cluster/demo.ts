// The whole Kubernetes path on one machine, ready to use: the cluster with PostgreSQL, MinIO, Secrets, hosts and the
// chart (boxyard-cluster.ts), the three example resources Ready behind the Ingress, and one public box published so
// `vagrant box add` has something to add. `make demo` runs it and keeps it running; the real-cluster suite starts
// from it too, so what the demo prints is what the suite proves works.
import { join } from 'node:path';
import { makeBox } from '@boxyard/box-repository/testing/boxes.ts';
import { HOSTS, NS, repoRoot, startBoxyardCluster, type BoxyardCluster } from './boxyard-cluster.ts';
import { until } from './fixture.ts';

export interface Demo {
  cluster: BoxyardCluster;
  urls: { boxes: string; files: string; shells: string };
  /** The generated admin password of each service (Secret <name>-<service>-admin). */
  admins: { boxes: string; files: string; shells: string };
  /** The box published at start, public: `vagrant box add demo/hello`. */
  box: string;
  /** Milliseconds from the start to the three resources Ready and answering through the Ingress. */
  readyMs: number;
}

async function publishDemoBox(base: string, password: string): Promise<string> {
  const call = async (path: string, body: unknown, token?: string) => {
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    if (response.status >= 300) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, unknown>;
  };
  const token = (await call('/api/auth/signin', { username: 'admin', password })).access_token as string;
  const root = '/api/organization/demo/box';
  await call('/api/organization', { name: 'demo' }, token);
  await call(root, { name: 'hello', isPublic: true, description: 'Published by make demo' }, token);
  await call(`${root}/hello/version`, { versionNumber: '1.0.0' }, token);
  await call(`${root}/hello/version/1.0.0/provider`, { name: 'virtualbox' }, token);
  await call(`${root}/hello/version/1.0.0/provider/virtualbox/architecture`, { name: 'amd64' }, token);
  const uploaded = await fetch(`${base}${root}/hello/version/1.0.0/provider/virtualbox/architecture/amd64/file/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'x-file-name': 'vagrant.box' },
    body: await makeBox(),
  });
  if (uploaded.status >= 300) throw new Error(`upload of demo/hello: ${uploaded.status} ${await uploaded.text()}`);
  return 'demo/hello';
}

export async function startDemo(log: (line: string) => void): Promise<Demo> {
  const began = Date.now();
  const cluster = await startBoxyardCluster(log);
  try {
    await cluster.kubectl(['apply', '-n', NS, '-f', join(repoRoot, 'crds', 'examples')]);
    await cluster.waitReady(['boxrepository/boxes', 'fileshare/files', 'terminalpool/shells']);
    const urls = { boxes: `https://${HOSTS.boxes}`, files: `https://${HOSTS.files}`, shells: `https://${HOSTS.shells}` };
    // The Ingress controller picks up new endpoints within seconds, not at once.
    for (const url of Object.values(urls)) {
      await until(`${url}/health/ready to answer 200`, async () => ((await fetch(`${url}/health/ready`)).status === 200 ? true : undefined), 60_000);
    }
    const admins = {
      boxes: await cluster.secretValue('boxes-box-repository-admin', 'password'),
      files: await cluster.secretValue('files-file-share-admin', 'password'),
      shells: await cluster.secretValue('shells-terminal-admin', 'password'),
    };
    const box = await publishDemoBox(urls.boxes, admins.boxes);
    return { cluster, urls, admins, box, readyMs: Date.now() - began };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** What `make demo` prints: where everything is and the lines to try. */
export function demoInstructions(demo: Pick<Demo, 'urls' | 'admins' | 'box'> & { caFile: string; kubeconfig: string }): string {
  const { urls, admins, box, caFile, kubeconfig } = demo;
  return `Boxyard is running on a real node (kubelet, containerd, Traefik on 127.0.0.1:80/443; /etc/hosts points the hosts there).

  box repository   ${urls.boxes}    admin / ${admins.boxes}
  file share       ${urls.files}    admin / ${admins.files}
  terminal         ${urls.shells}   admin / ${admins.shells}
  TLS: a private CA made for the demo: ${caFile}
  kubectl:         export KUBECONFIG=${kubeconfig}; kubectl get boxyard -n ${NS}

Try:
  VAGRANT_SERVER_URL=${urls.boxes} SSL_CERT_FILE=${caFile} vagrant box add ${box} --cacert ${caFile}
  curl --cacert ${caFile} -u admin:'${admins.files}' -F file=@README.md ${urls.files}/docs/README.md
  wget --mirror --no-parent -e robots=off --ca-certificate=${caFile} --user=admin --password='${admins.files}' --auth-no-challenge ${urls.files}/docs/
  the terminal page: ${urls.shells}/ in a browser that trusts ${caFile} (sign in as admin)

Stop it and remove everything it made: make demo-down`;
}

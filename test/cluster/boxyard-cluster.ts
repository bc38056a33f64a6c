// Boxyard installed on a real node, as a platform team would have it before applying resources: the cluster with
// the image imported, PostgreSQL and MinIO reachable from pods (on the node's bridge address, behind Services
// without selectors, as an external database and object store are), the Secrets the examples ask for (`db`, `s3`),
// TLS Secrets for the Ingress hosts from a private CA every client here trusts, the hosts in /etc/hosts, and the
// chart installed with `helm install` (two operator replicas, leader election). Used by the real-cluster suite and
// by `make bench` (section cluster).
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import * as Minio from 'minio';
import pg from 'pg';
import { startPostgres, type RunningPostgres } from 'boxyard/src/embedded-postgres.ts';
import { startControlPlane, type RunningControlPlane } from '../harness/kube.ts';
import { startMinio, type RunningMinio } from '../harness/minio.ts';
import { startCollector, type RunningCollector } from '../harness/otel-collector.ts';
import { NODE } from '../harness/node/network.ts';
import { builtImage, helmFor, kubectlFor, type Cli } from '../harness/clients.ts';
import { addHostsEntries, issueCertificates, removeHostsEntries } from './fixture.ts';
import { ignoreError } from '@boxyard/kit';

export const NS = 'team';
export const SYSTEM_NS = 'boxyard-system';
/** The Ingress hosts of crds/examples, by the name of their TLS Secret (`<name>-tls`). */
export const HOSTS = { boxes: 'boxes.example.com', files: 'files.example.com', shells: 'shells.example.com' };
export const BUCKETS = ['vagrant-boxes', 'shared-files'];
export const repoRoot = join(import.meta.dirname, '..', '..');

export interface Pod {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: { serviceAccountName?: string; containers: { image: string }[] };
  status: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { containerID?: string; image: string; ready: boolean; restartCount?: number }[];
  };
}

export const podReady = (pod: Pod) => pod.status.phase === 'Running' && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

export interface BoxyardCluster {
  dir: string;
  plane: RunningControlPlane;
  postgres: RunningPostgres;
  minio: RunningMinio;
  /** The OpenTelemetry Collector the chart's tracing.otlpEndpoint names. */
  collector: RunningCollector;
  s3: Minio.Client;
  kubectl: Cli;
  helm: Cli;
  image: { image: string; tar: string };
  caFile: string;
  /** Milliseconds: cluster start, helm install. */
  timings: { cluster: number; helm: number };
  json<T>(args: string[]): Promise<T>;
  pods(selector: string, namespace?: string): Promise<Pod[]>;
  secretValue(name: string, key: string): Promise<string>;
  /** A query on the `boxyard` database the services share. */
  sql(text: string): Promise<Record<string, unknown>[]>;
  /** kubectl wait for Ready; on failure the error carries the conditions, the pods and the unready pods' logs. */
  waitReady(resources: string[], timeoutSeconds?: number): Promise<void>;
  stop(): Promise<void>;
}

const externalService = (name: string, namespace: string, port: number, targetPort: string) => `apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: ${namespace} }
spec: { ports: [{ name: tcp, port: ${port}, targetPort: ${targetPort} }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}-external, namespace: ${namespace}, labels: { kubernetes.io/service-name: ${name} } }
addressType: IPv4
ports: [{ name: tcp, port: ${targetPort}, protocol: TCP }]
endpoints: [{ addresses: ["${NODE.address}"] }]
`;

export async function startBoxyardCluster(log: (line: string) => void): Promise<BoxyardCluster> {
  const image = builtImage();
  const dir = await mkdtemp(join(tmpdir(), 'boxyard-cluster-'));
  await chmod(dir, 0o755); // PostgreSQL runs as `postgres`
  const t0 = Date.now();
  const plane = await startControlPlane({ dir: join(dir, 'kube'), node: true, log });
  const timings = { cluster: Date.now() - t0, helm: 0 };
  log(plane.describe().join('\n  '));
  const kubectl = kubectlFor(plane.kubeconfig);
  const helm = helmFor(plane.kubeconfig);
  let postgres: RunningPostgres | undefined;
  let minio: RunningMinio | undefined;
  let collector: RunningCollector | undefined;

  const stop = async () => {
    await removeHostsEntries().catch(ignoreError('teardown: entries already removed'));
    await plane.stop();
    await Promise.allSettled([postgres?.stop(), minio?.stop(), collector?.stop()]);
    if (!process.env.BOXYARD_KEEP_CLUSTER_LOGS) await rm(dir, { recursive: true, force: true });
  };

  try {
    const secret = () => randomBytes(18).toString('base64url');
    [postgres, minio, collector] = await Promise.all([
      startPostgres({ dir: join(dir, 'pg'), password: secret(), fast: true, alsoListen: { address: NODE.address, clients: NODE.podCidr } }),
      startMinio({ dir: join(dir, 'minio'), accessKey: `e2e${randomBytes(4).toString('hex')}`, secretKey: secret(), host: NODE.address }),
      // Traces from the operator and every service pod (the chart's tracing.otlpEndpoint).
      startCollector({ dir: join(dir, 'otelcol'), host: NODE.address }),
      plane.node!.importImage(image.tar),
    ]);
    const admin = new pg.Client({ connectionString: postgres.adminUrl });
    await admin.connect();
    await admin.query('create database boxyard');
    await admin.end();
    const minioUrl = new URL(minio.endpoint);
    const s3 = new Minio.Client({
      endPoint: minioUrl.hostname,
      port: Number(minioUrl.port),
      useSSL: false,
      accessKey: minio.accessKey,
      secretKey: minio.secretKey,
    });
    await Promise.all(BUCKETS.map((bucket) => s3.makeBucket(bucket)));

    const pki = await issueCertificates(await mkdtemp(join(dir, 'tls-')), Object.values(HOSTS));
    const caFile = join(dir, 'ca.crt');
    await writeFile(caFile, pki.ca);
    setDefaultCACertificates([...getCACertificates('default'), pki.ca]);
    await addHostsEntries(Object.values(HOSTS));

    // The admin URL as pods reach it: the in-cluster Service name, and the `boxyard` database.
    const inCluster = (adminUrl: string) => Object.assign(new URL(adminUrl), { host: `postgres.${NS}.svc:5432`, pathname: '/boxyard' }).href;
    await kubectl(['create', 'namespace', NS]);
    await kubectl(['create', 'namespace', 'storage']);
    await kubectl(
      ['apply', '-f', '-'],
      [externalService('postgres', NS, 5432, new URL(postgres.adminUrl).port), externalService('minio', 'storage', 9000, minioUrl.port)].join('---\n'),
    );
    await kubectl(['create', 'secret', 'generic', 'db', '-n', NS, `--from-literal=url=${inCluster(postgres.adminUrl)}`]);
    await kubectl([
      'create',
      'secret',
      'generic',
      's3',
      '-n',
      NS,
      `--from-literal=accessKey=${minio.accessKey}`,
      `--from-literal=secretKey=${minio.secretKey}`,
    ]);
    for (const [name, host] of Object.entries(HOSTS)) {
      const files = join(dir, `${name}-tls`);
      await mkdir(files);
      await writeFile(join(files, 'tls.crt'), pki.certs[host]!.cert);
      await writeFile(join(files, 'tls.key'), pki.certs[host]!.key);
      await kubectl(['create', 'secret', 'tls', `${name}-tls`, '-n', NS, `--cert=${join(files, 'tls.crt')}`, `--key=${join(files, 'tls.key')}`]);
    }

    const at = image.image.lastIndexOf(':');
    const t1 = Date.now();
    await helm([
      'install',
      'boxyard',
      join(repoRoot, 'charts', 'boxyard'),
      '-n',
      SYSTEM_NS,
      '--create-namespace',
      '--set',
      `image.repository=${image.image.slice(0, at)}`,
      '--set',
      `image.tag=${image.image.slice(at + 1)}`,
      '--set',
      `tracing.otlpEndpoint=${collector.httpEndpoint}`,
      '--wait',
      '--timeout=5m',
    ]);
    timings.helm = Date.now() - t1;

    const json = async <T>(args: string[]): Promise<T> => JSON.parse(await kubectl([...args, '-o', 'json'])) as T;
    const pods = async (selector: string, namespace = NS) => (await json<{ items: Pod[] }>(['get', 'pods', '-n', namespace, '-l', selector])).items;
    const adminUrl = postgres.adminUrl;
    return {
      dir,
      plane,
      postgres,
      minio,
      collector,
      s3,
      kubectl,
      helm,
      image,
      caFile,
      timings,
      json,
      pods,
      stop,
      secretValue: async (name, key) =>
        Buffer.from((await kubectl(['get', 'secret', '-n', NS, name, '-o', `jsonpath={.data.${key}}`])).trim(), 'base64').toString(),
      async sql(text) {
        const client = new pg.Client({ connectionString: adminUrl.replace(/\/postgres$/, '/boxyard') });
        await client.connect();
        try {
          return (await client.query(text)).rows as Record<string, unknown>[];
        } finally {
          await client.end();
        }
      },
      async waitReady(resources, timeoutSeconds = 300) {
        await kubectl(['wait', '-n', NS, '--for=condition=Ready', ...resources, `--timeout=${timeoutSeconds}s`]).catch(async (error: unknown) => {
          // What a platform engineer would look at: the conditions, the pods, the logs of the unready ones.
          const report = [await kubectl(['get', 'boxyard,pods', '-n', NS, '-o', 'wide']).catch(String)];
          for (const pod of (await pods('app.kubernetes.io/part-of=boxyard')).filter((p) => !podReady(p))) {
            report.push(`--- ${pod.metadata.name}`, await kubectl(['logs', '-n', NS, pod.metadata.name, '--tail=30']).catch(String));
          }
          report.push(
            await kubectl(['get', ...resources, '-n', NS, '-o', 'jsonpath={range .items[*]}{.kind}/{.metadata.name}: {.status.conditions}{"\\n"}{end}']).catch(
              String,
            ),
          );
          throw new Error(`${(error as Error).message}\n${report.join('\n')}`, { cause: error });
        });
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

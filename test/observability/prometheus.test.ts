// Boxyard as a platform team scrapes it: a real Prometheus (Debian's) with static targets scrapes `boxyard dev`
// (every service) and an operator process, and PromQL over its HTTP API answers the questions an operator asks:
// requests per service, bytes moved, upload failures, sessions, SSE subscribers, storage and database errors, and
// the operator's reconciles and work queues under controller-runtime's names.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { dashboards, renderDashboard } from '../../charts/generate-dashboards.ts';
import { chartDir, kubectl, repoRoot, startOperatorProcess, waitFor, type OperatorProcess } from '@boxyard/operator/test/support.ts';
import { startDevProcess, type DevProcess } from '../harness/dev-process.ts';
import { startPrometheus, type RunningPrometheus } from '../harness/prometheus.ts';
import { ignoreError } from '@boxyard/kit';

const ADMIN_PASSWORD = 'Observed-Admin-Passw0rd';
const SERVICES = ['box-repository', 'file-share', 'terminal', 'second-service'];
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const namespace = `obs-${randomBytes(3).toString('hex')}`;

async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status} ${text}`);
  return JSON.parse(text) as T;
}

/** A request to a loopback HTTPS listener with a self-signed certificate (or plain HTTP). */
export function insecureRequest(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(
      url,
      { method: init.method ?? 'GET', headers: init.headers, rejectUnauthorized: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

async function boxFile(bytes: number): Promise<Buffer> {
  const archive = pack();
  const chunks: Buffer[] = [];
  archive.on('data', (c: unknown) => chunks.push(c as Buffer));
  const ended = new Promise<void>((r) => archive.on('end', () => r()));
  archive.entry({ name: 'metadata.json' }, JSON.stringify({ provider: 'virtualbox' }));
  archive.entry({ name: 'box-disk.img' }, randomBytes(bytes));
  archive.finalize();
  await ended;
  return Buffer.concat(chunks);
}

export interface ObservedInstallation {
  dev: DevProcess;
  operator: OperatorProcess;
  prometheus: RunningPrometheus;
  /** Bytes the traffic uploaded to the box repository and the file share. */
  uploaded: { box: number; file: number };
  /** Ends what the traffic left open (the SSE stream), then the processes. */
  stop(): Promise<void>;
}

/**
 * `boxyard dev` and an operator (watching its own namespace, with a TerminalPool whose database Secret is missing,
 * so it reconciles and retries), both scraped by Prometheus, after traffic touching every series.
 */
async function observedInstallation(dir: string): Promise<ObservedInstallation> {
  const kubeconfig = inject('kubeconfig');
  await kubectl(kubeconfig, ['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'crds')]);
  await kubectl(kubeconfig, ['create', 'namespace', namespace]);
  const [dev, operator] = await Promise.all([
    // Gauges read from PostgreSQL refreshed every second, like the scrapes (the default is 15 s).
    startDevProcess({ env: { BOXYARD_ADMIN_PASSWORD: ADMIN_PASSWORD, BOXYARD_METRICS__DATABASE_CACHE_SECONDS: '1' } }),
    startOperatorProcess({ kubeconfig, logFile: join(dir, 'operator.log'), args: ['--namespaces', namespace, '--workers', '2'] }),
  ]);
  const target = (url: string) => ({ address: new URL(url).host, scheme: new URL(url).protocol === 'https:' ? ('https' as const) : ('http' as const) });
  // `container` as the Prometheus Operator sets it in a cluster (the alerts select targets by it).
  const prometheus = await startPrometheus({
    dir: join(dir, 'prometheus'),
    targets: [
      // Each service's /metrics listener (`boxyard dev` prints them as <service>-metrics), not its public port.
      ...SERVICES.map((service) => ({ job: 'boxyard', ...target(dev.metricsUrls[service]!), labels: { container: service } })),
      { job: 'boxyard-operator', address: `127.0.0.1:${operator.port}`, labels: { container: 'operator' } },
    ],
    ruleFiles: [join(chartDir, 'rules', 'boxyard.rules.yaml')],
  });
  // Traffic after the first scrape, so rates see it.
  await waitFor('the first scrape of every target', async () => (await prometheus.query('up == 1')).length === SERVICES.length + 1, 30_000, 250);

  // The operator: one resource that cannot progress yet (its database Secret is missing) → reconciles, retries.
  await kubectl(
    kubeconfig,
    ['apply', '-n', namespace, '-f', '-'],
    stringify({
      apiVersion: 'boxyard.io/v1alpha1',
      kind: 'TerminalPool',
      metadata: { name: 'shells' },
      spec: { database: { secretRef: { name: 'db' } } },
    }),
  );

  // The box repository: a box uploaded, downloaded, and an upload refused for its checksum.
  const boxes = dev.urls['box-repository']!;
  const { access_token: token } = await json<{ access_token: string }>(
    await fetch(`${boxes}/api/auth/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
    }),
  );
  const post = (path: string, body: unknown) =>
    fetch(`${boxes}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-access-token': token }, body: JSON.stringify(body) }).then(
      json,
    );
  await post('/api/organization', { name: 'acme' });
  await post('/api/organization/acme/box', { name: 'base', is_public: true });
  await post('/api/organization/acme/box/base/version', { version_number: '1.0.0' });
  await post('/api/organization/acme/box/base/version/1.0.0/provider', { name: 'virtualbox' });
  await post('/api/organization/acme/box/base/version/1.0.0/provider/virtualbox/architecture', { name: 'amd64' });
  const box = await boxFile(256 * 1024);
  const upload = (checksum: string) =>
    fetch(
      `${boxes}/api/organization/acme/box/base/version/1.0.0/provider/virtualbox/architecture/amd64/file/upload?checksum=${checksum}&checksum_type=sha256`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream', 'x-file-name': 'base.box', 'x-access-token': token },
        body: box,
      },
    );
  expect((await upload('0'.repeat(64))).status).toBe(422); // checksum mismatch: nothing stored
  expect((await upload(sha256(box))).status).toBe(201);
  const downloaded = Buffer.from(await (await fetch(`${boxes}/acme/boxes/base/versions/1.0.0/providers/virtualbox/amd64/base.box`)).arrayBuffer());
  expect(sha256(downloaded)).toBe(sha256(box));

  // The file share: a file uploaded and read back, and a live SSE subscriber.
  const files = dev.urls['file-share']!;
  const basic = `Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`;
  const file = randomBytes(128 * 1024);
  const boundary = `----boxyard${randomBytes(8).toString('hex')}`;
  const form = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="notes.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  expect(
    (
      await fetch(`${files}/notes.bin`, {
        method: 'POST',
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, authorization: basic },
        body: form,
      })
    ).status,
  ).toBe(201);
  expect(sha256(Buffer.from(await (await fetch(`${files}/notes.bin`, { headers: { authorization: basic } })).arrayBuffer()))).toBe(sha256(file));
  const events = new AbortController();
  const stream = await fetch(`${files}/events`, { headers: { authorization: basic, accept: 'text/event-stream' }, signal: events.signal });
  expect(stream.status).toBe(200);
  // Read it until the end: a body nobody reads is closed when its Response is garbage-collected (undici), and the
  // subscriber the scrape must see would be gone at a random moment.
  const reading = stream.body!.pipeTo(new WritableStream()).catch(ignoreError('read until the stream is cancelled at the end'));

  // The terminal: one session started on the local backend (insecureRequest serves HTTP and HTTPS listeners alike).
  const terminal = dev.urls.terminal!;
  const login = await insecureRequest(`${terminal}/auth/login/basic`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  expect(login.status, login.text).toBe(200);
  const cookie = /auth_token=[^;]+/.exec(String(login.headers['set-cookie'] ?? ''))![0];
  const started = await insecureRequest(`${terminal}/api/terminal/start`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie },
    body: JSON.stringify({ terminal_cookie: 'observed' }),
  });
  expect(started.status, started.text).toBe(200);

  // The second service: a plain request.
  expect((await insecureRequest(`${dev.urls['second-service']!}/health`)).status).toBe(200);

  return {
    dev,
    operator,
    prometheus,
    uploaded: { box: box.length, file: file.length },
    async stop() {
      events.abort();
      await reading;
      await Promise.allSettled([prometheus.stop(), operator.stop(), dev.stop({ discard: true })]);
      await kubectl(kubeconfig, ['delete', 'namespace', namespace, '--wait=false']).catch(ignoreError('teardown: the namespace may be gone'));
    },
  };
}

/** The query's samples once Prometheus has scraped something for it (scrapes run every second). */
async function samples(prometheus: RunningPrometheus, promql: string, enough: (values: number[]) => boolean = (v) => v.length > 0) {
  return waitFor(
    `PromQL ${promql}`,
    async () => {
      const result = await prometheus.query(promql);
      return enough(result.map((s) => Number(s.value[1]))) ? result : undefined;
    },
    30_000,
    500,
  );
}

describe('a real Prometheus scrapes boxyard dev and the operator', () => {
  let dir: string;
  let installation: ObservedInstallation;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'boxyard-prometheus-'));
    installation = await observedInstallation(dir);
  }, 240_000);

  afterAll(async () => {
    await installation?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('scrapes every service and the operator, and has each service request counter', async () => {
    const { prometheus } = installation;
    const up = await samples(prometheus, 'up == 1', (v) => v.length === SERVICES.length + 1);
    expect(up.map((s) => s.metric.job).sort()).toEqual([...SERVICES.map(() => 'boxyard'), 'boxyard-operator']);
    const requests = await samples(prometheus, 'sum by (service) (http_request_duration_seconds_count)', (v) => v.length === SERVICES.length);
    expect(Object.fromEntries(requests.map((s) => [s.metric.service, Number(s.value[1]) > 0]))).toEqual(Object.fromEntries(SERVICES.map((s) => [s, true])));
    // Scraped on each service's own metrics listener: the public ports do not serve /metrics at all.
    for (const service of SERVICES) {
      expect((await insecureRequest(`${installation.dev.urls[service]!}/metrics`)).status, service).toBe(404);
      expect(new URL(installation.dev.metricsUrls[service]!).hostname, service).toBe('127.0.0.1');
    }
    // Route templates, never raw paths.
    const download = '/:org/boxes/:box/versions/:version/providers/:provider/:arch/:file_name';
    await waitFor(
      'the download route in a scrape',
      async () =>
        (await prometheus.query('count by (route) (http_request_duration_seconds_count{service="box-repository"})')).some((s) => s.metric.route === download),
      30_000,
      250,
    );
    expect(await prometheus.query('count(http_request_duration_seconds_count{route=~".*/acme/.*"})')).toEqual([]);
  });

  it('counts the bytes each service moved and why uploads failed', async () => {
    const { prometheus, uploaded } = installation;
    const up = await samples(prometheus, 'boxyard_upload_bytes_total > 0', (v) => v.length === 2);
    expect(Object.fromEntries(up.map((s) => [s.metric.service, Number(s.value[1])]))).toMatchObject({
      'box-repository': uploaded.box,
      'file-share': uploaded.file,
    });
    const down = await samples(prometheus, 'boxyard_download_bytes_total > 0', (v) => v.length === 2);
    expect(Object.fromEntries(down.map((s) => [s.metric.service, Number(s.value[1])]))).toMatchObject({
      'box-repository': uploaded.box,
      'file-share': uploaded.file,
    });
    const failures = await samples(prometheus, 'boxyard_upload_failures_total{service="box-repository"} > 0');
    expect(failures.map((s) => [s.metric.reason, s.value[1]])).toEqual([['checksum_mismatch', '1']]);
    // Nothing failed on the store's or the database's side.
    expect(await prometheus.query('sum(boxyard_storage_errors_total) > 0')).toEqual([]);
    expect(await samples(prometheus, 'count by (service) (boxyard_database_errors_total)', (v) => v.length === 3)).toHaveLength(3);
    expect(await prometheus.query('sum(boxyard_database_errors_total{reason=~"connection|timeout"}) > 0')).toEqual([]);
  });

  it('has the terminal sessions per backend, their start latency, the SSE subscribers and the certificate expiry', async () => {
    const { prometheus } = installation;
    const sessions = await samples(prometheus, 'boxyard_terminal_sessions_active{state="running"} > 0');
    expect(sessions.map((s) => [s.metric.backend, s.value[1]])).toEqual([['local', '1']]);
    const starts = await samples(prometheus, 'boxyard_terminal_session_start_duration_seconds_count > 0');
    expect(starts.map((s) => [s.metric.backend, s.metric.outcome, s.value[1]])).toEqual([['local', 'started', '1']]);
    const subscribers = await samples(prometheus, 'boxyard_sse_subscribers{service="file-share"} > 0');
    expect(subscribers.map((s) => s.value[1])).toEqual(['1']);
    // Services listening with HTTPS in `boxyard dev` report their generated certificate (good for a year).
    const https = SERVICES.filter((service) => installation.dev.urls[service]!.startsWith('https:'));
    expect(https.length).toBeGreaterThan(0);
    const days = await samples(prometheus, '(boxyard_tls_certificate_expiry_timestamp_seconds - time()) / 86400', (v) => v.length === https.length);
    expect(days.map((s) => s.metric.service).sort()).toEqual(https.sort());
    for (const sample of days) expect(Number(sample.value[1])).toBeGreaterThan(300);
  });

  it("has the operator's reconciles, retries and work queue under controller-runtime's names", async () => {
    const { prometheus, operator } = installation;
    const reconciles = await samples(prometheus, 'sum by (controller, result) (controller_runtime_reconcile_total{controller="terminalpools"}) > 0').catch(
      (error: unknown) => {
        throw new Error(`${(error as Error).message}\noperator log:\n${operator.log().slice(-3000)}`);
      },
    );
    // The missing Secret stalls it: retried with backoff (controller-runtime's `requeue`).
    expect(reconciles.map((s) => s.metric.result)).toContain('requeue');
    await samples(prometheus, 'workqueue_retries_total{name="terminalpools"} > 0');
    await samples(prometheus, 'controller_runtime_reconcile_time_seconds_count{controller="terminalpools"} > 0');
    await samples(prometheus, 'workqueue_queue_duration_seconds_count{name="terminalpools"} > 0');
    await samples(prometheus, 'workqueue_adds_total{name="terminalpools"} > 0');
    const depth = await samples(prometheus, 'workqueue_depth');
    // One queue per controller: the three service kinds and the two backup kinds.
    const controllers = ['backups', 'boxrepositories', 'fileshares', 'scheduledbackups', 'terminalpools'];
    expect(depth.map((s) => s.metric.name).sort()).toEqual(controllers);
    expect(await samples(prometheus, 'controller_runtime_reconcile_errors_total')).toHaveLength(controllers.length);
  });

  it("runs every dashboard panel's query and gets data", async () => {
    const { prometheus } = installation;
    const queries = dashboards.flatMap((spec) => {
      const model = renderDashboard(spec) as { panels: { title: string; targets?: { expr: string }[] }[] };
      return model.panels.flatMap((panel) =>
        (panel.targets ?? []).map((t) => ({ where: `${spec.title} / ${panel.title}`, expr: t.expr.replaceAll('$__rate_interval', '1m') })),
      );
    });
    expect(queries.length).toBeGreaterThan(40);
    const empty: string[] = [];
    // Rates need two samples after the traffic: allow a few scrapes.
    await waitFor(
      'every panel to have data',
      async () => {
        empty.length = 0;
        for (const { where, expr } of queries) if ((await prometheus.query(expr)).length === 0) empty.push(`${where}: ${expr}`);
        return empty.length === 0;
      },
      30_000,
      1000,
    ).catch(() => {
      throw new Error(`panels without data:\n${empty.join('\n')}`);
    });
  });

  it('evaluates every alert rule without error, and none fires on a healthy installation', async () => {
    const { prometheus } = installation;
    const groups = await waitFor(
      'the rules to be evaluated',
      async () => {
        const response = (await (await fetch(`${prometheus.url}/api/v1/rules`)).json()) as {
          data: { groups: { rules: { name: string; health: string; lastError?: string; state?: string }[] }[] };
        };
        const all = response.data.groups.flatMap((g) => g.rules);
        return all.length > 0 && all.every((r) => r.health !== 'unknown') ? all : undefined;
      },
      30_000,
      500,
    );
    expect(groups.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`)).toEqual([]);
    expect(groups.filter((r) => r.state !== 'inactive').map((r) => r.name)).toEqual([]);
  });
});

// Traces as a platform team follows them: `boxyard dev` exports OTLP (set by the standard OTEL_* variables) to a
// real OpenTelemetry Collector, and one box upload arrives as one trace: the HTTP server span with the
// PostgreSQL query spans and the storage spans inside it, named by the semantic conventions; the services' log
// lines inside the request carry the same trace_id.
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { kubectl, repoRoot, startOperatorProcess, waitFor } from '@boxyard/operator/test/support.ts';
import { startService } from '../bench/box-repository.ts';
import { startDevProcess, type DevProcess } from '../harness/dev-process.ts';
import { createTestBucket, createTestDatabase } from '../harness/fixtures.ts';
import { startCollector, type ReceivedSpan, type RunningCollector } from '../harness/otel-collector.ts';
import { openTerminal } from '@boxyard/terminal/testing/test-gateway.ts';
import { ignoreError } from '@boxyard/kit';

const ADMIN_PASSWORD = 'Traced-Admin-Passw0rd';
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status} ${text}`);
  return JSON.parse(text) as T;
}

/** The spans below `root` in its trace (children, grandchildren...). */
function descendants(spans: ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] {
  const inTrace = spans.filter((s) => s.traceId === root.traceId);
  const found: ReceivedSpan[] = [];
  const walk = (parent: string) => {
    for (const span of inTrace.filter((s) => s.parentSpanId === parent)) {
      found.push(span);
      walk(span.spanId);
    }
  };
  walk(root.spanId);
  return found;
}

/** A small valid .box (tar with metadata.json). */
async function tinyBox(provider: string): Promise<Buffer> {
  const archive = pack();
  const chunks: Buffer[] = [];
  archive.on('data', (c: unknown) => chunks.push(c as Buffer));
  const ended = new Promise<void>((r) => archive.on('end', () => r()));
  archive.entry({ name: 'metadata.json' }, JSON.stringify({ provider }));
  archive.entry({ name: 'box-disk.img' }, randomBytes(64 * 1024));
  archive.finalize();
  await ended;
  return Buffer.concat(chunks);
}

describe('traces reach a real OpenTelemetry Collector', () => {
  let dir: string;
  let collector: RunningCollector;
  let dev: DevProcess;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'boxyard-traces-'));
    collector = await startCollector({ dir: join(dir, 'collector') });
    dev = await startDevProcess({
      env: {
        BOXYARD_ADMIN_PASSWORD: ADMIN_PASSWORD,
        BOXYARD_LOGGING__LEVEL: 'info',
        // The webhook test's receiver listens on loopback.
        BOXYARD_WEBHOOKS__ALLOW_PRIVATE_TARGETS: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_METRICS_EXPORTER: 'none',
        OTEL_LOGS_EXPORTER: 'none',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
    });
  }, 180_000);

  afterAll(async () => {
    await dev?.stop({ discard: true });
    await collector?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('has the HTTP server span, its SQL query spans and its storage spans in one tree, and logs carry its trace_id', async () => {
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
    const box = await tinyBox('virtualbox');
    const upload = await fetch(
      `${boxes}/api/organization/acme/box/base/version/1.0.0/provider/virtualbox/architecture/amd64/file/upload?checksum=${sha256(box)}&checksum_type=sha256`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream', 'x-file-name': 'base.box', 'x-access-token': token },
        body: box,
      },
    );
    expect(upload.status).toBe(201);
    const requestId = upload.headers.get('x-request-id');

    const isUploadServerSpan = (s: ReceivedSpan) => s.kind === 2 && String(s.attributes['http.route'] ?? '').endsWith('/file/upload');
    const server = await waitFor('the upload request span at the collector', async () => collector.spans().find(isUploadServerSpan), 30_000, 200).catch(
      (error: unknown) => {
        throw new Error(
          `${(error as Error).message}\nspans received: ${collector
            .spans()
            .map((s) => `${s.name} kind=${s.kind} ${JSON.stringify(s.attributes)}`)
            .slice(-20)
            .join('\n')}`,
        );
      },
    );
    expect(server.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 201 });
    expect(server.parentSpanId).toBe('');

    // The work inside the request arrives with it (batches may come a little later than the server span).
    const tree = await waitFor(
      'the SQL and storage spans of the upload',
      async () => {
        const below = descendants(collector.spans(), server);
        return below.some((s) => s.attributes['db.system.name'] === 'postgresql') && below.some((s) => s.name === 'storage put') ? below : undefined;
      },
      30_000,
      200,
    );
    const queries = tree.filter((s) => s.attributes['db.system.name'] === 'postgresql');
    for (const query of queries) {
      expect(query.kind).toBe(3); // client
      expect(query.name).toMatch(/^(SELECT|INSERT|UPDATE|DELETE|WITH|BEGIN|COMMIT|ROLLBACK|START|SET|LOCK) boxyard$/);
      expect(query.attributes).toMatchObject({ 'db.namespace': 'boxyard', 'server.address': '127.0.0.1', 'db.query.text': expect.any(String) });
      // Values go as $n parameters, never into the span.
      expect(String(query.attributes['db.query.text'])).not.toContain(token);
    }
    expect(queries.map((s) => s.attributes['db.operation.name'])).toContain('INSERT');
    const put = tree.find((s) => s.name === 'storage put')!;
    expect(put.kind).toBe(3);
    expect(put.attributes).toMatchObject({ 'boxyard.storage.driver': 'local', 'boxyard.storage.bytes': box.length });

    // The request's log lines name the trace, its one access-log line ("request") too.
    // (Read once the process's output has caught up: a loaded machine can deliver it after the span.)
    const lines = await waitFor(
      "the request's access-log line",
      async () => {
        const found = dev
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{') && l.includes(requestId ?? '-'));
        return found.some((l) => (JSON.parse(l) as { msg: string }).msg === 'request') ? found : undefined;
      },
      15_000,
      100,
    );
    expect(lines.filter((l) => (JSON.parse(l) as { msg: string }).msg === 'request')).toHaveLength(1);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ trace_id: server.traceId, span_id: expect.stringMatching(/^[0-9a-f]{16}$/) });

    // A download from local storage is written straight to the socket (a hijacked reply: no onSend, where
    // @fastify/otel ends spans): its server span still arrives, with the status it answered and the storage read inside.
    const download = await fetch(`${boxes}/acme/boxes/base/versions/1.0.0/providers/virtualbox/amd64/base.box`, { headers: { 'x-access-token': token } });
    expect(download.status, await download.clone().text()).toBe(200);
    expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(box));
    const read = await waitFor(
      'the download request span with its storage read',
      async () => {
        const spans = collector.spans();
        for (const span of spans.filter(
          (s) => s.kind === 2 && s.attributes['http.request.method'] === 'GET' && String(s.attributes['url.path']).endsWith('/base.box'),
        )) {
          const get = descendants(spans, span).find((s) => s.name === 'storage get');
          if (get) return { span, get };
        }
        return undefined;
      },
      30_000,
      200,
    );
    expect(read.span.attributes).toMatchObject({ 'http.response.status_code': 200 });
    expect(read.get.attributes).toMatchObject({ 'boxyard.storage.driver': 'local' });
  });

  it('traces the S3 calls of an upload and a download inside their requests (box repository on MinIO)', async () => {
    const bucket = await createTestBucket('traces');
    const adminPassword = `Traced-${randomBytes(9).toString('base64url')}1a`;
    const service = await startService(
      {
        server: { host: '127.0.0.1', port: 0 },
        logging: { level: 'warn' },
        database: { url: await createTestDatabase('traces') },
        storage: {
          driver: 's3',
          endpoint: bucket.endpoint,
          access_key: bucket.accessKey,
          secret_key: bucket.secretKey,
          bucket: bucket.bucket,
          region: bucket.region,
          prefix: 'boxes',
        },
        session: { secret: randomBytes(32).toString('base64url') },
        admin: { password: adminPassword },
      },
      { OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint, OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none', OTEL_BSP_SCHEDULE_DELAY: '100' },
    );
    try {
      const base = service.url;
      const { access_token: token } = await json<{ access_token: string }>(
        await fetch(`${base}/api/auth/signin`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'admin', password: adminPassword }),
        }),
      );
      const post = (path: string, body: unknown) =>
        fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-access-token': token }, body: JSON.stringify(body) }).then(
          json,
        );
      await post('/api/organization', { name: 'cloud' });
      await post('/api/organization/cloud/box', { name: 'stored', is_public: true });
      await post('/api/organization/cloud/box/stored/version', { version_number: '1.0.0' });
      await post('/api/organization/cloud/box/stored/version/1.0.0/provider', { name: 'libvirt' });
      await post('/api/organization/cloud/box/stored/version/1.0.0/provider/libvirt/architecture', { name: 'amd64' });
      const box = await tinyBox('libvirt');
      const upload = await fetch(`${base}/api/organization/cloud/box/stored/version/1.0.0/provider/libvirt/architecture/amd64/file/upload`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream', 'x-file-name': 'vagrant.box', 'x-access-token': token },
        body: box,
      });
      expect(upload.status).toBe(201);
      const download = await fetch(`${base}/cloud/boxes/stored/versions/1.0.0/providers/libvirt/amd64/vagrant.box`, { headers: { 'x-access-token': token } });
      expect(download.status, await download.clone().text()).toBe(200);
      expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(box));

      const s3SpansUnder = (httpMethod: string, method: string) => async () => {
        const spans = collector.spans().filter((s) => s.service === 'boxyard-box-repository');
        for (const server of spans.filter((s) => s.kind === 2 && s.attributes['http.request.method'] === httpMethod)) {
          const call = descendants(spans, server).find((s) => s.name === `S3.${method}`);
          if (call) return call;
        }
        return undefined;
      };
      const put = await waitFor('S3.PutObject inside the upload request', s3SpansUnder('POST', 'PutObject'), 30_000, 200);
      expect(put).toMatchObject({
        kind: 3,
        attributes: { 'rpc.system': 'aws-api', 'rpc.service': 'S3', 'rpc.method': 'PutObject', 'aws.s3.bucket': bucket.bucket },
      });
      const get = await waitFor('S3.GetObject inside the download request', s3SpansUnder('GET', 'GetObject'), 30_000, 200);
      expect(get).toMatchObject({
        kind: 3,
        attributes: { 'rpc.method': 'GetObject', 'aws.s3.bucket': bucket.bucket, 'aws.s3.key': expect.stringMatching(/^boxes\//) },
      });
    } finally {
      await service.stop();
    }
  });

  it('has a CLIENT span per webhook delivery attempt inside the trace of the request that caused it, and the receiver gets its traceparent', async () => {
    const headers: Record<string, string | string[] | undefined>[] = [];
    const receiver = createServer((request, response) => {
      headers.push(request.headers);
      request.resume().on('end', () => response.end('ok'));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const boxes = dev.urls['box-repository']!;
      const { access_token: token } = await json<{ access_token: string }>(
        await fetch(`${boxes}/api/auth/signin`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
        }),
      );
      const call = (method: string, path: string, body?: unknown) =>
        fetch(`${boxes}${path}`, {
          method,
          headers: { 'x-access-token': token, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        }).then(json);
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      await call('POST', '/api/admin/webhooks', { url, events: ['box.deleted'] });
      await call('POST', '/api/organization', { name: 'hooked' });
      await call('POST', '/api/organization/hooked/box', { name: 'brief' });
      await call('DELETE', '/api/organization/hooked/box/brief');

      const span = await waitFor(
        'the webhook delivery span',
        async () => collector.spans().find((s) => s.attributes['boxyard.webhook.event'] === 'box.deleted'),
        30_000,
        200,
      );
      expect(span).toMatchObject({ kind: 3, name: 'POST' });
      // The delivery joins the trace of the request that caused the event (kept with it in the outbox).
      const deleted = collector.spans().find((s) => s.kind === 2 && s.traceId === span.traceId);
      expect(deleted?.attributes).toMatchObject({ 'http.request.method': 'DELETE', 'http.response.status_code': 200 });
      expect(descendants(collector.spans(), deleted!).map((s) => s.spanId)).toContain(span.spanId);
      expect(span.attributes).toMatchObject({
        'http.request.method': 'POST',
        'url.full': url,
        'server.address': '127.0.0.1',
        'http.response.status_code': 200,
        'boxyard.webhook.attempt': 1,
      });
      // The receiver can join the delivery's trace: its traceparent names this span.
      expect(headers.map((h) => h.traceparent)).toContain(`00-${span.traceId}-${span.spanId}-01`);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it("has a span per operator reconcile, with the resource's kind, namespace and name, and its API calls inside", async () => {
    const kubeconfig = inject('kubeconfig');
    const namespace = `traced-${randomBytes(3).toString('hex')}`;
    await kubectl(kubeconfig, ['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'crds')]);
    await kubectl(kubeconfig, ['create', 'namespace', namespace]);
    // The operator process inherits this worker's environment: OTEL_* point it at the collector.
    Object.assign(process.env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint,
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    const operator = await startOperatorProcess({
      kubeconfig,
      logFile: join(dir, 'operator.log'),
      args: ['--namespaces', namespace, '--workers', '1'],
    }).finally(() => {
      for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_METRICS_EXPORTER', 'OTEL_LOGS_EXPORTER', 'OTEL_BSP_SCHEDULE_DELAY']) delete process.env[name];
    });
    try {
      await kubectl(
        kubeconfig,
        ['apply', '-n', namespace, '-f', '-'],
        stringify({ apiVersion: 'boxyard.io/v1alpha1', kind: 'TerminalPool', metadata: { name: 'shells' }, spec: { database: { secretRef: { name: 'db' } } } }),
      );
      const isReconcile = (s: ReceivedSpan) =>
        s.service === 'boxyard-operator' && s.name === 'reconcile TerminalPool' && s.attributes['k8s.namespace.name'] === namespace;
      const [reconcile, calls] = await waitFor(
        'a reconcile span with API calls inside',
        async () => {
          const spans = collector.spans();
          for (const span of spans.filter(isReconcile)) {
            const below = descendants(spans, span);
            if (below.length > 0) return [span, below] as const;
          }
          return undefined;
        },
        60_000,
        250,
      );
      expect(reconcile.parentSpanId).toBe('');
      expect(reconcile.attributes).toMatchObject({
        'boxyard.controller': 'terminalpools',
        'boxyard.resource.kind': 'TerminalPool',
        'boxyard.resource.name': 'shells',
      });
      for (const call of calls) {
        expect(call.kind).toBe(3);
        expect(call.name).toMatch(/^(get|list|create|update|patch|apply|delete) [\w/]+$/);
        expect(call.attributes).toMatchObject({
          'http.request.method': expect.any(String),
          'http.response.status_code': expect.any(Number),
          'server.address': '127.0.0.1',
        });
      }
      // The missing Secret is reported in the resource's status: a status write is one of the calls.
      expect(calls.map((c) => c.name)).toContain('patch terminalpools/status');
    } finally {
      await operator.stop();
      await kubectl(kubeconfig, ['delete', 'namespace', namespace, '--wait=false']).catch(ignoreError('teardown: the namespace may be gone'));
    }
  });

  it('follows one terminal session from the gateway into its agent: REST start and WebSocket attach', async () => {
    const terminal = dev.urls.terminal!;
    const login = await fetch(`${terminal}/auth/login/basic`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
    });
    expect(login.status).toBe(200);
    const cookie = /auth_token=[^;]+/.exec(login.headers.get('set-cookie') ?? '')![0];
    const started = await fetch(`${terminal}/api/terminal/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify({ terminal_cookie: 'traced' }),
    });
    expect(started.status).toBe(200);
    const { data } = (await started.json()) as { data: { websocket_path: string } };
    const shell = await openTerminal(terminal, data.websocket_path, { cookie, origin: terminal });
    shell.type('echo traced-$((6*7))\n');
    await shell.waitFor('traced-42');
    await shell.close();

    // REST start: the agent process starts inside the start request's trace (TRACEPARENT in its environment).
    const start = await waitFor(
      'the agent span inside the start request',
      async () => {
        const spans = collector.spans();
        for (const gateway of spans.filter((s) => s.kind === 2 && s.attributes['http.route'] === '/api/terminal/start')) {
          const agent = descendants(spans, gateway).find((s) => s.service === 'boxyard-terminal-agent' && s.name === 'terminal-agent start');
          if (agent) return { gateway, agent };
        }
        return undefined;
      },
      30_000,
      250,
    ).catch((error: unknown) => {
      throw new Error(
        `${(error as Error).message}\nspans: ${collector
          .spans()
          .map((s) => `${s.service} ${s.name} ${s.traceId.slice(0, 8)} parent=${s.parentSpanId}`)
          .slice(-30)
          .join('\n')}`,
      );
    });
    expect(start.agent.traceId).toBe(start.gateway.traceId);
    // WebSocket attach: the gateway's upgrade request is one server span ending with its 101 (the session that
    // follows is not part of the HTTP exchange). The agent stream it relays was opened ahead, during the start
    // (sessions/attach-ahead.ts), so the agent's /attach sits inside the start request's trace; an attach with
    // nothing prepared opens it inside the upgrade.
    const attach = await waitFor(
      "the upgrade span, and the agent's /attach inside the start or the upgrade",
      async () => {
        const spans = collector.spans();
        for (const upgrade of spans.filter((s) => s.kind === 2 && s.service === 'boxyard-dev' && s.attributes['http.route'] === '/ws/terminal/:sessionId')) {
          const agent = [...descendants(spans, start.gateway), ...descendants(spans, upgrade)].find(
            (s) => s.service === 'boxyard-terminal-agent' && s.name === 'GET /attach',
          );
          if (agent) return { upgrade, agent };
        }
        return undefined;
      },
      30_000,
      250,
    );
    expect(attach.upgrade).toMatchObject({ name: 'GET /ws/terminal/:sessionId', parentSpanId: '', attributes: { 'http.response.status_code': 101 } });
    expect(attach.agent).toMatchObject({ kind: 2, attributes: { 'http.response.status_code': 101 } });
  });
});

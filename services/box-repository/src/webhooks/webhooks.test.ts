// Webhooks end to end on the run's PostgreSQL: real box repositories deliver the events outbox to real HTTP
// receivers on loopback (allowed by configuration here, refused by default), and receivers check what a user's
// receiver would: every event arrives, once per delivery id, signed in both schemes.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeBox } from '../testing/boxes.ts';
import { createBoxPath, createOrganization, startTestService, uploadRaw, type TestService } from '../testing/test-service.ts';

interface Received {
  headers: Record<string, string>;
  body: string;
}

interface Receiver {
  url: string;
  port: number;
  received: Received[];
  close(): Promise<void>;
}

/** An HTTP receiver on 127.0.0.1 that records every request; `answer` decides the response (200 by default). */
async function startReceiver(options: { port?: number; answer?: (request: IncomingMessage, response: ServerResponse) => void } = {}): Promise<Receiver> {
  const received: Received[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8') });
      if (options.answer) options.answer(request, response);
      else response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const FAST = { poll_interval_seconds: 0.05, backoff_initial_seconds: 0.05, backoff_max_seconds: 0.2, timeout_seconds: 1 };

type Delivery = any;
const deliveries = async (service: TestService, webhookId: number): Promise<Delivery[]> => {
  const response = await service.request('GET', `/api/admin/webhooks/${webhookId}/deliveries?per_page=100`, { token: service.adminToken });
  expect(response.status).toBe(200);
  return response.body as Delivery[];
};

const createWebhook = async (service: TestService, json: Record<string, unknown>) => {
  const response = await service.request('POST', '/api/admin/webhooks', { token: service.adminToken, json });
  expect(response.status, response.text).toBe(201);
  return response.body as { id: number; secret: string; url: string; events: string[] };
};

/** A sample of the service's /metrics: the series `name` carrying every label given. */
const metric = async (service: TestService, name: string, labels: Record<string, string> = {}) => {
  const text = await (await fetch(service.running.metricsUrl)).text();
  const line = text
    .split('\n')
    .find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
};

const hexSignature = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

let service: TestService;
let strict: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService({ config: { webhooks: { ...FAST, allow_private_targets: true, max_attempts: 50 } } });
  // The defaults that matter here: private targets refused; and only two attempts, to see a delivery fail.
  strict = await startTestService({ config: { webhooks: { ...FAST, max_attempts: 2 } } });
  await createOrganization(service, 'acme');
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service?.close();
  await strict?.close();
});

describe('webhooks', () => {
  it('a receiver that was down receives every event after it comes back, once per delivery id, signed in both schemes', async () => {
    const port = await freePort(); // nothing listens there yet
    const webhook = await createWebhook(service, { url: `http://127.0.0.1:${port}/hook`, events: ['box.uploaded', 'box.deleted', 'user.created'] });
    expect(webhook.secret).toMatch(/^whsec_/); // generated, shown once
    const listed = await service.request('GET', '/api/admin/webhooks', { token: service.adminToken });
    expect(listed.text).not.toContain(webhook.secret);
    expect((await service.request('GET', `/api/admin/webhooks/${webhook.id}`, { token: service.adminToken })).body).toEqual({
      ...webhook,
      secret: undefined,
      description: '',
      created_at: expect.any(String),
    });

    // Three changes, each recording its event in its own transaction.
    const path = { org: 'acme', box: 'comeback', version: '1.2.3', provider: 'virtualbox', arch: 'amd64' };
    await createBoxPath(service, service.adminToken, path);
    expect((await uploadRaw(service, path, await makeBox(), { token: service.adminToken })).status).toBe(201);
    await createBoxPath(service, service.adminToken, { ...path, box: 'shortlived' });
    expect((await service.request('DELETE', '/api/organization/acme/box/shortlived', { token: service.adminToken })).status).toBe(200);
    // user.created is recorded by sign-up (accounts); any type in the outbox is delivered to its subscribers.
    await service.sql(`insert into events (type, data) values ('user.created', '{"username": "carol"}')`);

    // The receiver is down: attempts fail and are logged, and retried.
    await vi.waitFor(
      async () => {
        const log = await deliveries(service, webhook.id);
        expect(log).toHaveLength(3);
        for (const delivery of log) expect(delivery.attempts).toBeGreaterThanOrEqual(2);
      },
      { timeout: 20_000, interval: 50 },
    );

    // A pending delivery may be in flight: it cannot be sent again by hand.
    const pending = (await deliveries(service, webhook.id))[0];
    const refused = await service.request('POST', `/api/admin/webhooks/${webhook.id}/deliveries/${pending.id}/redeliver`, { token: service.adminToken });
    expect(refused.status).toBe(409);

    const receiver = await startReceiver({ port });
    receivers.push(receiver);
    await vi.waitFor(
      async () => {
        for (const delivery of await deliveries(service, webhook.id)) expect(delivery.status).toBe('delivered');
      },
      { timeout: 20_000, interval: 50 },
    );

    const log = await deliveries(service, webhook.id);
    const ids = receiver.received.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(ids.length); // once per delivery id
    expect(ids.sort()).toEqual(log.map((d: Delivery) => d.id).sort());

    const verifier = new Webhook(webhook.secret);
    const bodies = receiver.received.map((r) => {
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-boxyard-signature']).toBe(hexSignature(webhook.secret, r.body));
      expect(verifier.verify(r.body, r.headers)).toEqual(JSON.parse(r.body));
      return JSON.parse(r.body) as { event: string; data: Record<string, unknown> };
    });
    expect(bodies).toEqual(
      expect.arrayContaining([
        { event: 'box.uploaded', data: expect.objectContaining({ organization: 'acme', box: 'comeback', version: '1.2.3' }) },
        { event: 'box.deleted', data: { organization: 'acme', box: 'shortlived' } },
        { event: 'user.created', data: { username: 'carol' } },
      ]),
    );
    expect(bodies).toHaveLength(3);

    // The log shows every attempt: refused connections first, then the receiver's 200.
    for (const delivery of log) {
      expect(delivery.attempt_log).toHaveLength(delivery.attempts);
      expect(delivery.attempt_log.map((a: Delivery) => a.attempt)).toEqual(Array.from({ length: delivery.attempts }, (_, i) => i + 1));
      for (const failed of delivery.attempt_log.slice(0, -1))
        expect(failed).toMatchObject({ status_code: null, error: expect.stringContaining('ECONNREFUSED') });
      expect(delivery.attempt_log.at(-1)).toMatchObject({ status_code: 200, error: null });
      expect(delivery).toMatchObject({ status: 'delivered', last_status_code: 200, next_attempt_at: null, finished_at: expect.any(String) });
    }
    expect(await metric(service, 'boxyard_webhook_deliveries_total', { outcome: 'delivered' })).toBeGreaterThanOrEqual(3);
    expect(await metric(service, 'boxyard_webhook_delivery_failures_total', { reason: 'connection' })).toBeGreaterThanOrEqual(6);
    expect((await service.request('DELETE', `/api/admin/webhooks/${webhook.id}`, { token: service.adminToken })).status).toBe(200);
  });

  it('two replicas on one database never deliver the same event twice', async () => {
    const second = await startTestService({ databaseUrl: service.databaseUrl, config: { webhooks: { ...FAST, allow_private_targets: true, concurrency: 4 } } });
    const delivered = ['boxyard_webhook_deliveries_total', { outcome: 'delivered' }] as const;
    const before = (await metric(service, ...delivered))!;
    try {
      // A receiver slow enough that both replicas have deliveries in flight at once.
      const receiver = await startReceiver({ answer: (_request, response) => void setTimeout(() => response.end('ok'), 10) });
      receivers.push(receiver);
      const secret = 'a-plain-text-secret-0123456789';
      const webhook = await createWebhook(service, { url: receiver.url, events: ['box.deleted'], secret });
      const count = 60;
      await service.sql(
        `insert into events (type, data) select 'box.deleted', jsonb_build_object('organization', 'acme', 'box', 'box-' || n) from generate_series(1, ${count}) n`,
      );
      await vi.waitFor(() => expect(receiver.received.length).toBeGreaterThanOrEqual(count), { timeout: 30_000, interval: 50 });
      await vi.waitFor(
        async () => {
          const log = await deliveries(service, webhook.id);
          expect(log.filter((d: Delivery) => d.status === 'delivered')).toHaveLength(count);
        },
        { timeout: 10_000, interval: 50 },
      );

      const ids = receiver.received.map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(count);
      expect(new Set(ids).size).toBe(count);
      const boxes = receiver.received.map((r) => (JSON.parse(r.body) as { data: { box: string } }).data.box);
      expect(new Set(boxes).size).toBe(count);
      // A secret that is not `whsec_`: Standard Webhooks' raw format verifies it.
      const verifier = new Webhook(secret, { format: 'raw' });
      for (const r of receiver.received) {
        expect(r.headers['x-boxyard-signature']).toBe(hexSignature(secret, r.body));
        expect(() => verifier.verify(r.body, r.headers)).not.toThrow();
      }
      // Each replica counts what it delivered; together exactly once each; the backlog is empty.
      const first = (await metric(service, ...delivered))! - before;
      const other = (await metric(second, ...delivered))!;
      expect(first + other).toBe(count);
      console.log(`two replicas: ${first} and ${other} of ${count} deliveries`);
      expect(await metric(service, 'boxyard_webhook_backlog')).toBe(0);
    } finally {
      await second.close();
    }
  });

  it('does not follow redirects', async () => {
    const elsewhere = await startReceiver();
    const redirecting = await startReceiver({ answer: (_request, response) => response.writeHead(307, { location: elsewhere.url }).end() });
    receivers.push(elsewhere, redirecting);
    const webhook = await createWebhook(service, { url: redirecting.url, events: ['user.created'] });
    await service.sql(`insert into events (type, data) values ('user.created', '{"username": "dave"}')`);
    await vi.waitFor(
      async () => {
        const [delivery] = await deliveries(service, webhook.id);
        // A claim counts the attempt before its request goes out: wait for the receiver to have seen the retry.
        expect(redirecting.received.length).toBeGreaterThanOrEqual(2);
        expect(delivery.attempts).toBeGreaterThanOrEqual(2);
        expect(delivery.attempt_log[0]).toMatchObject({ status_code: 307, error: expect.stringContaining('redirects are not followed') });
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(elsewhere.received).toHaveLength(0);
    // Deleting the webhook stops its retries and removes its log.
    expect((await service.request('DELETE', `/api/admin/webhooks/${webhook.id}`, { token: service.adminToken })).status).toBe(200);
    expect((await service.request('GET', `/api/admin/webhooks/${webhook.id}/deliveries`, { token: service.adminToken })).status).toBe(404);
  });

  it('ends an attempt that gets no answer within the timeout, and logs why', async () => {
    const silent = await startReceiver({ answer: () => {} }); // reads the request, never answers
    receivers.push(silent);
    const webhook = await createWebhook(service, { url: silent.url, events: ['user.created'] });
    await service.sql(`insert into events (type, data) values ('user.created', '{"username": "erin"}')`);
    await vi.waitFor(
      async () => {
        const [delivery] = await deliveries(service, webhook.id);
        expect(delivery.attempt_log[0]).toMatchObject({ status_code: null, error: 'no answer within 1 s' });
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(await metric(service, 'boxyard_webhook_delivery_failures_total', { reason: 'timeout' })).toBeGreaterThanOrEqual(1);
    expect((await service.request('DELETE', `/api/admin/webhooks/${webhook.id}`, { token: service.adminToken })).status).toBe(200);

    // The status decides: a 200 whose body never ends is delivered, not a timeout.
    const endless = await startReceiver({
      answer: (_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).write('accepted, still talking'),
    });
    receivers.push(endless);
    const second = await createWebhook(service, { url: endless.url, events: ['user.created'] });
    await service.sql(`insert into events (type, data) values ('user.created', '{"username": "frank"}')`);
    await vi.waitFor(
      async () => {
        const [delivery] = await deliveries(service, second.id);
        expect(delivery).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200 });
      },
      { timeout: 20_000, interval: 50 },
    );
    expect((await service.request('DELETE', `/api/admin/webhooks/${second.id}`, { token: service.adminToken })).status).toBe(200);
  });

  it('refuses private targets by default: address literals when saved, names resolving to them when connecting', async () => {
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://[::1]/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.1/hook',
      'http://[::ffff:127.0.0.1]/',
      'http://2130706433/',
    ]) {
      const refused = await strict.request('POST', '/api/admin/webhooks', { token: strict.adminToken, json: { url, events: ['box.deleted'] } });
      expect(refused.status, url).toBe(422);
      expect(refused.body.errors[0]).toMatchObject({ pointer: '/url', rule: 'public_address' });
    }
    // `localhost` resolves to 127.0.0.1: saved, but every connection to it is refused, and the receiver gets nothing.
    const receiver = await startReceiver();
    receivers.push(receiver);
    const webhook = await createWebhook(strict, { url: `http://localhost:${receiver.port}/hook`, events: ['box.deleted'] });
    await strict.sql(`insert into events (type, data) values ('box.deleted', '{"organization": "acme", "box": "gone"}')`);
    await vi.waitFor(
      async () => {
        const [delivery] = await deliveries(strict, webhook.id);
        expect(delivery.status).toBe('failed'); // max_attempts: 2
      },
      { timeout: 20_000, interval: 50 },
    );
    const [delivery] = await deliveries(strict, webhook.id);
    expect(delivery.attempt_log).toHaveLength(2);
    for (const attempt of delivery.attempt_log)
      expect(attempt.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1) \(loopback\), which webhooks may not reach/);
    expect(receiver.received).toHaveLength(0);
    expect(await metric(strict, 'boxyard_webhook_delivery_failures_total', { reason: 'refused_address' })).toBe(2);
    expect(await metric(strict, 'boxyard_webhook_deliveries_total', { outcome: 'failed' })).toBe(1);

    // An admin sends a failed delivery again (one more attempt, same webhook-id): refused again, and logged.
    const again = await strict.request('POST', `/api/admin/webhooks/${webhook.id}/deliveries/${delivery.id}/redeliver`, { token: strict.adminToken });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ id: delivery.id, status: 'pending', finished_at: null });
    await vi.waitFor(
      async () => {
        const [retried] = await deliveries(strict, webhook.id);
        expect(retried).toMatchObject({ status: 'failed', attempts: 3 });
        expect(retried.attempt_log).toHaveLength(3);
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(receiver.received).toHaveLength(0);
    const unknown = await strict.request('POST', `/api/admin/webhooks/${webhook.id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`, {
      token: strict.adminToken,
    });
    expect(unknown.status).toBe(404);
    expect((await strict.request('POST', `/api/admin/webhooks/${webhook.id}/deliveries/not-a-uuid/redeliver`, { token: strict.adminToken })).status).toBe(404);
  });

  it('refuses bad subscriptions with the failing member named', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: 'ftp://example.com/x', events: ['box.deleted'] }, '/url'],
      [{ url: 'not a url', events: ['box.deleted'] }, '/url'],
      [{ url: 'https://user:pass@example.com/x', events: ['box.deleted'] }, '/url'],
      [{ url: 'https://example.com/x', events: ['box.exploded'] }, '/events/0'],
      [{ url: 'https://example.com/x', events: [] }, '/events'],
      [{ url: 'https://example.com/x', events: ['box.deleted'], secret: 'short' }, '/secret'],
      [{ events: ['box.deleted'] }, '/url'],
    ];
    for (const [json, pointer] of cases) {
      const response = await strict.request('POST', '/api/admin/webhooks', { token: strict.adminToken, json });
      expect(response.status, JSON.stringify(json)).toBe(422);
      expect(
        response.body.errors.map((e: { pointer: string }) => e.pointer),
        JSON.stringify(json),
      ).toContain(pointer);
    }
    expect((await strict.request('GET', '/api/admin/webhooks/999999', { token: strict.adminToken })).status).toBe(404);
    expect((await strict.request('DELETE', '/api/admin/webhooks/abc', { token: strict.adminToken })).status).toBe(404);
  });
});

// Issue 27 item 6: 500 anonymous requests sending a body one byte at a time were all still held after 330 s on
// every service. Here each of the four services runs with short `server.timeouts` (the rule, not its default
// length, is under test): 125 such connections per service (500 in all, as in the attack) are cut while a normal request is still answered.
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '@boxyard/box-repository/testing/test-service.ts';
import { startTestShare, type TestShare } from '@boxyard/file-share/testing/test-share.ts';
import { startSecondService, type SecondService } from '@boxyard/second-service/service.ts';
import { secondServiceConfigSchema } from '@boxyard/second-service/config.ts';
import { startTestGateway } from '@boxyard/terminal/testing/test-gateway.ts';
import { createTestDatabase } from '../harness/fixtures.ts';

const timeouts = { headers_seconds: 1, body_window_seconds: 1, body_min_bytes: 1024, idle_seconds: 2 };
const CONNECTIONS = 125;

let boxes: TestService;
let share: TestShare;
let terminal: Awaited<ReturnType<typeof startTestGateway>>;
let second: SecondService;

beforeAll(async () => {
  [boxes, share, terminal, second] = await Promise.all([
    startTestService({ config: { server: { timeouts } } }),
    startTestShare({ storage: 'local', overrides: { server: { timeouts } } }),
    createTestDatabase('slow').then((url) => startTestGateway(url, { server: { timeouts } })),
    startSecondService(secondServiceConfigSchema.parse({ server: { host: '127.0.0.1', port: 0, timeouts }, logging: { level: 'silent' } })),
  ]);
});
afterAll(async () => {
  await Promise.all([boxes?.close(), share?.close(), terminal?.close(), second?.close()]);
});

/** Opens a connection that sends a POST's headers and then one byte of its body every 100 ms; resolves when the server closes it. */
function slowBody(base: string, path: string): { closed: Promise<void>; stop: () => void } {
  const url = new URL(base);
  const port = Number(url.port);
  const socket: Socket = url.protocol === 'https:' ? connectTls({ host: url.hostname, port, rejectUnauthorized: false }) : connectTcp(port, url.hostname);
  socket.on('error', () => {});
  socket.write(`POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`);
  const timer = setInterval(() => socket.writable && socket.write(' '), 100);
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return { closed, stop: () => clearInterval(timer) };
}

const cases = () => [
  { service: 'box repository', url: boxes.url, path: '/api/auth/signin' },
  { service: 'file share', url: share.url, path: '/auth/login/basic' },
  { service: 'terminal', url: terminal.url, path: '/auth/login/basic' },
  { service: 'second service', url: second.url, path: '/health' },
];

describe('bodies sent a byte at a time', () => {
  it(`are cut on every service (${CONNECTIONS} connections each) while normal requests are answered`, async () => {
    const all = cases().flatMap(({ url, path }) => Array.from({ length: CONNECTIONS }, () => slowBody(url, path)));
    const served: [string, number][] = [];
    for (const { service, url } of cases()) served.push([service, await statusOf(`${url}/health`)]);
    await Promise.all(all.map((c) => c.closed));
    for (const c of all) c.stop();
    expect(served).toEqual(cases().map(({ service }) => [service, 200]));
  });
});

/** GET over HTTP or HTTPS (the second service's certificate is self-signed). */
function statusOf(url: string): Promise<number> {
  const get = url.startsWith('https:') ? httpsGet : httpGet;
  return new Promise((resolve, reject) => {
    get(url, { rejectUnauthorized: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    }).on('error', reject);
  });
}

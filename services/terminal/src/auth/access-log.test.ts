// The gateway's access-log line names the signed-in caller (an operator filters on it): the auth preHandlers tell
// the kit's access log who called, as the other services do. The principal was null on every line.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, login, startTestGateway } from '../testing/test-gateway.ts';

let gateway: Awaited<ReturnType<typeof startTestGateway>>;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  gateway = await startTestGateway(await createTestDatabase('terminal_access_log'), { logging: { level: 'info' } });
  // The lines the service writes, read where pino writes them (its destination stream, shared by child loggers).
  let holder: object | null = gateway.app.log;
  let streamSymbol: symbol | undefined;
  while (holder && !streamSymbol) {
    streamSymbol = Object.getOwnPropertySymbols(holder).find((symbol) => symbol.description === 'pino.stream');
    holder = Object.getPrototypeOf(holder) as object | null;
  }
  const stream = (gateway.app.log as any)[streamSymbol!];
  stream.write = (line: string) => {
    for (const text of line.split('\n').filter(Boolean)) lines.push(JSON.parse(text));
    return true;
  };
});
afterAll(() => gateway?.close());

it("names the signed-in caller on the request's access-log line, and no one for an anonymous request", async () => {
  const cookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
  const list = (headers: Record<string, string>) => fetch(`${gateway.url}/api/terminal/sessions`, { headers }).then((response) => response.status);
  expect(await list({ cookie, 'x-request-id': 'with-cookie' })).toBe(200);
  expect(await list({ 'x-request-id': 'anonymous' })).toBe(401);
  const line = (id: string) => lines.find((entry) => entry.reqId === id && entry.msg === 'request');
  await expect.poll(() => line('anonymous')).toBeDefined();
  expect(line('with-cookie')).toMatchObject({ route: '/api/terminal/sessions', status: 200, principal: 'admin' });
  expect(line('anonymous')).toMatchObject({ status: 401, principal: null });
});

// A client that leaves while the gateway is still connecting to its agent: the half-open agent connection is
// dropped without an uncaught error (it ended the gateway process: vitest reported it from ws/access.test.ts).
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { discardUpstream } from './discard-upstream.ts';

// An agent that accepts the TCP connection and never answers the upgrade: the handshake stays under way.
const accepted: Socket[] = [];
const silentAgent = createServer((socket) => void accepted.push(socket));
beforeAll(async () => {
  silentAgent.listen(0, '127.0.0.1');
  await once(silentAgent, 'listening');
});
afterAll(() => {
  for (const socket of accepted) socket.destroy();
  silentAgent.close();
});

it('drops an agent connection still in its handshake without an uncaught error', async () => {
  const address = silentAgent.address() as { port: number };
  const upstream = new WebSocket(`ws://127.0.0.1:${address.port}/attach`);
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(upstream.readyState).toBe(WebSocket.CONNECTING);
  // Not events.once: it would reject on the 'error' that ws reports for the aborted handshake.
  const closed = new Promise((resolve) => upstream.once('close', resolve));
  discardUpstream(upstream);
  await closed;
  expect(upstream.readyState).toBe(WebSocket.CLOSED);
});

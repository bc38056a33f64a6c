// The agent's hand-framed end of an attached stream against the ws library as the other end (what the gateway's
// recorder uses; the gateway's relay passes the browser's frames on as they came): messages both ways, fragments,
// ping/pong, both closing handshakes, and protocol errors closed with their codes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { FramedSocket } from './framed-socket.ts';

const MAX = 65_536;
let server: Server | undefined;
/** Ends of the pairs made by the current test (upgraded sockets are not the HTTP server's to close). */
const opened: { terminate(): void }[] = [];

/** A server whose upgrades become FramedSockets, and a ws client connected to it. */
async function pair(): Promise<{ agent: FramedSocket; client: WebSocket }> {
  const wss = new WebSocketServer({ noServer: true, clientTracking: false });
  let resolveAgent!: (agent: FramedSocket) => void;
  const agent = new Promise<FramedSocket>((resolve) => (resolveAgent = resolve));
  server = createServer();
  server.on('upgrade', (request, socket, head) => wss.handleUpgrade(request, socket, head, (ws) => resolveAgent(FramedSocket.from(ws, MAX))));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`, { perMessageDeflate: false, maxPayload: 4 * MAX });
  await new Promise((resolve, reject) => client.once('open', resolve).once('error', reject));
  opened.push(client, await agent);
  return { agent: await agent, client };
}

const next = <T extends unknown[]>(emitter: { once(event: string, listener: (...args: T) => void): unknown }, event: string) =>
  new Promise<T>((resolve) => emitter.once(event, (...args: T) => resolve(args)));

afterEach(async () => {
  for (const end of opened.splice(0)) end.terminate();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

describe('FramedSocket (the agent end of an attached stream)', () => {
  it('passes binary and text messages both ways, large ones whole, and calls back once written', async () => {
    const { agent, client } = await pair();
    const received = next<[Buffer, boolean]>(agent, 'message');
    client.send(Buffer.from('ls\r'), { binary: true });
    expect(await received).toEqual([Buffer.from('ls\r'), true]);
    const text = next<[Buffer, boolean]>(agent, 'message');
    client.send(JSON.stringify({ type: 'resize', cols: 80, rows: 24 }));
    const [payload, binary] = await text;
    expect([payload.toString(), binary]).toEqual(['{"type":"resize","cols":80,"rows":24}', false]);

    const big = Buffer.alloc(3 * MAX - 7, 'x');
    const messages: [Buffer, boolean][] = [];
    const three = new Promise<void>((resolve) => client.on('message', (data: Buffer, isBinary: boolean) => messages.push([data, isBinary]) === 3 && resolve()));
    const written = new Promise<Error | null | undefined>((resolve) => agent.send(big, { binary: true }, resolve));
    agent.send(Buffer.from('$ '), { binary: true });
    agent.send('{"type":"pong"}');
    expect(await written).toBeFalsy();
    await three;
    expect(messages.map(([data, isBinary]) => [data.length, isBinary])).toEqual([
      [big.length, true],
      [2, true],
      [15, false],
    ]);
    expect(messages[0]![0].equals(big)).toBe(true);
  });

  it('joins a fragmented message, answers pings and reports pongs', async () => {
    const { agent, client } = await pair();
    const received = next<[Buffer, boolean]>(agent, 'message');
    client.send(Buffer.from('abc'), { binary: true, fin: false });
    client.send(Buffer.from('def'), { binary: true, fin: true });
    expect(await received).toEqual([Buffer.from('abcdef'), true]);

    const pong = next<[Buffer]>(client, 'pong');
    client.ping(Buffer.from('hi'));
    expect((await pong)[0].toString()).toBe('hi');
    const agentPong = next(agent, 'pong');
    agent.ping(); // ws answers it by itself
    await agentPong;
  });

  it('closes with a code and reason, and ends once the other side answered', async () => {
    const { agent, client } = await pair();
    const clientClosed = next<[number, Buffer]>(client, 'close');
    const agentClosed = next(agent, 'close');
    agent.close(4300, 'stopped');
    const [code, reason] = await clientClosed;
    expect([code, reason.toString()]).toEqual([4300, 'stopped']);
    await agentClosed;
  });

  it("answers the other side's close with its code, and sends nothing after it", async () => {
    const { agent, client } = await pair();
    const clientClosed = next<[number]>(client, 'close');
    const agentClosed = next(agent, 'close');
    client.close(1000, 'client left');
    expect((await clientClosed)[0]).toBe(1000);
    await agentClosed;
    const late = await new Promise<Error | null | undefined>((resolve) => agent.send(Buffer.from('late'), { binary: true }, resolve));
    expect(late?.message).toMatch(/closed/);
  });

  it('closes with 1002 on an unmasked frame and 1009 on a message over its limit', async () => {
    {
      const { agent, client } = await pair();
      const closed = next<[number]>(client, 'close');
      // A server's (unmasked) binary frame sent by a client breaks RFC 6455.
      (client as unknown as { _socket: Socket })._socket.write(Buffer.from([0x82, 0x01, 0x61]));
      expect((await closed)[0]).toBe(1002);
      await next(agent, 'close');
    }
    {
      const { agent, client } = await pair();
      const closed = next<[number]>(client, 'close');
      client.send(Buffer.alloc(MAX / 2 + 1), { binary: true, fin: false });
      client.send(Buffer.alloc(MAX / 2 + 1), { binary: true, fin: true });
      expect((await closed)[0]).toBe(1009);
      await next(agent, 'close');
    }
  });
});

// The first attach of a local session, made shorter (issue 35, session start): the gateway hands the agent its signed
// challenge with the session's settings (a spare's stdin, a new agent's environment), the agent prints its answer
// beside its address, and the first attach goes straight to `GET /attach` with no `POST /challenge` round trip.
// Checked against real agents, spare and cold: the answer proves the agent, its Authorization works once and only
// once, and a challenge the gateway did not sign gets no answer (the attach then challenges on its own, as before).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { authorizationFrom, authorizeAttach, newChallenge, openAgentStream, type AgentCredentials, type AgentStream } from '../agent/client.ts';
import { sessionKeys } from '../agent/handshake.ts';
import { createLocalBackend } from './local.ts';
import type { SessionBackend, StartedAgent } from './types.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves once the stream has brought some of the shell's output (its prompt). */
function firstOutput(stream: AgentStream): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = stream.head.length;
    // The prompt may have come with the upgrade's answer (the agent sends a small read at once): then no more comes.
    if (bytes > 0) return resolve(bytes);
    const timer = setTimeout(() => reject(new Error('no output within 10 s')), 10_000);
    stream.socket.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      clearTimeout(timer);
      resolve(bytes);
    });
    stream.socket.resume();
  });
}

describe('local backend: the first attach needs no challenge of its own', () => {
  const dirs: string[] = [];
  const backends: SessionBackend[] = [];
  const started: { id: string; agent: StartedAgent; backend: SessionBackend }[] = [];

  const backend = (warmAgents: number) => {
    const socketDir = mkdtempSync(join(tmpdir(), 'by-first-'));
    dirs.push(socketDir);
    const created = createLocalBackend({
      shell: '/bin/sh',
      socketDir,
      accounts: { prefix: 'boxyard-fa-', home_base: '/var/tmp/boxyard-fa-homes', map: {} },
      ability: { canSwitch: false, canCreate: false, self: { name: 'test', uid: process.getuid?.() ?? 0 } },
      log: { info: () => {}, warn: () => {} },
      warmAgents,
    });
    backends.push(created);
    return created;
  };

  const start = async (on: SessionBackend, challengeKeys?: ReturnType<typeof sessionKeys>) => {
    const id = randomUUID();
    const keys = sessionKeys(randomUUID());
    const credentials: AgentCredentials = { sessionId: id, keys };
    const challenge = newChallenge({ sessionId: id, keys: challengeKeys ?? keys });
    const agent = await on.start({
      sessionId: id,
      ownerId: randomUUID(),
      ownerName: 'admin',
      ownerRole: 'admin',
      agentKey: keys.agentKey,
      gatewayPublicKey: keys.gatewayPublicKey,
      expiresAt: Date.now() + 600_000,
      idleTimeoutSeconds: 600,
      reattachGraceSeconds: 600,
      scrollbackBytes: 65_536,
      challenge,
    });
    started.push({ id, agent, backend: on });
    return { agent, credentials, challenge };
  };

  afterAll(async () => {
    await Promise.all(started.map(({ id, agent, backend: on }) => on.release({ id, resource: agent.resource, address: agent.address })));
    await Promise.all(backends.map((b) => b.close()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['a spare agent (stdin)', 1],
    ['a new agent (its environment)', 0],
  ])('%s answers the challenge it was started with: its Authorization attaches, once', async (_, warmAgents) => {
    const on = backend(warmAgents);
    for (let i = 0; i < 100 && warmAgents > 0 && on.warmAgents!().length === 0; i++) await sleep(50);
    const { agent, credentials, challenge } = await start(on);
    expect(agent.answer, 'the agent printed an answer beside its address').toBeDefined();

    const authorization = authorizationFrom(agent.address, credentials, challenge.nonce, agent.answer, 'GET', '/attach');
    const stream = await openAgentStream(agent.address, credentials, undefined, authorization);
    expect(await firstOutput(stream)).toBeGreaterThan(0);
    stream.socket.destroy();

    // Seen once, used once: the same Authorization again is refused.
    await expect(openAgentStream(agent.address, credentials, undefined, authorization)).rejects.toThrow(/401/);
    // The answer proves the agent to this session's keys only.
    const other: AgentCredentials = { sessionId: credentials.sessionId, keys: sessionKeys(randomUUID()) };
    expect(() => authorizationFrom(agent.address, other, challenge.nonce, agent.answer, 'GET', '/attach')).toThrow(/not the agent/);
  });

  it('gets no answer for a challenge signed with another key; the attach then challenges on its own', async () => {
    const { agent, credentials } = await start(backend(1), sessionKeys(randomUUID()));
    expect(agent.answer).toBeUndefined();
    const stream = await openAgentStream(agent.address, credentials, undefined, await authorizeAttach(agent.address, credentials));
    expect(await firstOutput(stream)).toBeGreaterThan(0);
    stream.socket.destroy();
  });
});

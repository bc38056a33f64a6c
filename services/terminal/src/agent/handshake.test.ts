// The gateway ↔ agent handshake against a real agent (its HTTP server, its shell on a pty): the agent proves it is
// the session's before the gateway sends anything that counts, and every call carries a signature the agent takes
// once, for that call only.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from './agent.ts';
import { agentStatus, NotTheAgentError, type AgentCredentials } from './client.ts';
import {
  agentProof,
  CHALLENGE_FRESH_MS,
  CHALLENGE_HEADER,
  CHALLENGE_SIGNATURE_HEADER,
  challengeSignature,
  createChallenges,
  gatewayAuthorization,
  newNonce,
  sessionKeys,
} from './handshake.ts';
import { parseAgentSettings } from './settings.ts';

const SESSION = '0b7f3c9e-3f4c-4c1e-9a51-7d2f52a1c0de';

/** One raw HTTP call to the agent's socket. */
function raw(
  socketPath: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('gateway ↔ agent handshake', () => {
  const secret = 'c2Vzc2lvbi1zZWNyZXQtb2YtdGhpcy10ZXN0LW9ubHkx';
  const keys = sessionKeys(secret);
  const credentials: AgentCredentials = { sessionId: SESSION, keys };
  let dir: string;
  let socketPath: string;
  let agent: RunningAgent;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'handshake-'));
    socketPath = join(dir, 'agent.sock');
    const settings = parseAgentSettings({
      BOXYARD_AGENT_SESSION_ID: SESSION,
      BOXYARD_AGENT_LISTEN: `unix:${socketPath}`,
      BOXYARD_AGENT_KEY: keys.agentKey,
      BOXYARD_AGENT_GATEWAY_KEY: keys.gatewayPublicKey,
      BOXYARD_AGENT_SHELL: '/bin/sh',
      BOXYARD_AGENT_EXPIRES_AT: String(Date.now() + 600_000),
    });
    agent = await startAgent(settings, { log: () => {} });
  });

  afterAll(async () => {
    agent?.terminate('stopped');
    await agent?.done;
    rmSync(dir, { recursive: true, force: true });
  });

  /** The headers of the gateway's signed challenge. */
  const challengeHeaders = (gatewayNonce: string, signWith = keys, madeAt = Date.now()) => ({
    [CHALLENGE_HEADER]: gatewayNonce,
    [CHALLENGE_SIGNATURE_HEADER]: challengeSignature(signWith, SESSION, gatewayNonce, madeAt),
  });

  /** What a gateway does: challenge, check the proof, sign the call. */
  const signedCall = async (method: string, path: string, signFor = { method, path }) => {
    const gatewayNonce = newNonce();
    const challenge = await raw(socketPath, 'POST', '/challenge', challengeHeaders(gatewayNonce));
    expect(challenge.status).toBe(200);
    const agentNonce = challenge.body.nonce as string;
    expect(challenge.body.proof).toBe(agentProof(keys.agentKey, SESSION, gatewayNonce, agentNonce));
    return gatewayAuthorization(keys, SESSION, agentNonce, gatewayNonce, signFor.method, signFor.path);
  };

  it('serves the gateway that holds the session’s keys', async () => {
    await expect(agentStatus(`unix:${socketPath}`, credentials)).resolves.toMatchObject({ session_id: SESSION, exited: false });
  });

  it('is not taken for the agent by a gateway of another session (its proof does not match)', async () => {
    const other: AgentCredentials = { sessionId: SESSION, keys: sessionKeys('another-session-secret-xxxxxxxxxxxxxxxxxxxx') };
    await expect(agentStatus(`unix:${socketPath}`, other)).rejects.toBeInstanceOf(NotTheAgentError);
  });

  it('takes a signature once, and only for the call it was made for', async () => {
    const authorization = await signedCall('GET', '/status');
    expect((await raw(socketPath, 'GET', '/status', { authorization })).status).toBe(200);
    // Replayed (seen on the wire): refused.
    expect((await raw(socketPath, 'GET', '/status', { authorization })).status).toBe(401);
    // Signed for /status, used for /terminate: refused, and the shell lives on.
    const forStatus = await signedCall('GET', '/status', { method: 'GET', path: '/status' });
    expect((await raw(socketPath, 'POST', '/terminate', { authorization: forStatus })).status).toBe(401);
    await expect(agentStatus(`unix:${socketPath}`, credentials)).resolves.toMatchObject({ exited: false });
  });

  it('refuses calls without the gateway’s signature: none, the old bearer secret, a signature by another key', async () => {
    expect((await raw(socketPath, 'GET', '/status')).status).toBe(401);
    expect((await raw(socketPath, 'GET', '/status', { authorization: `Bearer ${secret}` })).status).toBe(401);
    const gatewayNonce = newNonce();
    const challenge = await raw(socketPath, 'POST', '/challenge', challengeHeaders(gatewayNonce));
    const forged = gatewayAuthorization(
      sessionKeys('forger-secret-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'),
      SESSION,
      challenge.body.nonce as string,
      gatewayNonce,
      'GET',
      '/status',
    );
    expect((await raw(socketPath, 'GET', '/status', { authorization: forged })).status).toBe(401);
    // A challenge must carry a well-formed nonce.
    expect((await raw(socketPath, 'POST', '/challenge', { [CHALLENGE_HEADER]: 'short' })).status).toBe(400);
  });

  it('refuses a challenge whose signature is not the gateway’s: another key, replayed, stale, malformed (401)', async () => {
    const forger = sessionKeys('forger-secret-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx');
    const refused = [
      challengeHeaders(newNonce(), forger),
      challengeHeaders(newNonce(), keys, Date.now() - CHALLENGE_FRESH_MS - 60_000),
      challengeHeaders(newNonce(), keys, Date.now() + CHALLENGE_FRESH_MS + 60_000),
      { ...challengeHeaders(newNonce()), [CHALLENGE_SIGNATURE_HEADER]: `${Date.now()}.${'A'.repeat(86)}` },
      { ...challengeHeaders(newNonce()), [CHALLENGE_SIGNATURE_HEADER]: 'x'.repeat(10_000) },
    ];
    for (const headers of refused) {
      const answer = await raw(socketPath, 'POST', '/challenge', headers);
      expect(answer.status, JSON.stringify(headers).slice(0, 200)).toBe(401);
      expect(answer.body).toEqual({ message: 'unauthorized' });
    }
    // The gateway's challenge is answered once; the same request seen on the wire and sent again is not.
    const headers = challengeHeaders(newNonce());
    expect((await raw(socketPath, 'POST', '/challenge', headers)).status).toBe(200);
    expect((await raw(socketPath, 'POST', '/challenge', headers)).status).toBe(401);
  });

  it('keeps the gateway’s prepared challenge through a flood of unsigned challenges from anyone else', async () => {
    // The gateway prepares an attach's challenge ahead (sessions/attach-ahead.ts) and uses it a round trip later.
    const authorization = await signedCall('GET', '/status');
    const unsigned = [];
    for (let round = 0; round < 12; round++) {
      // 50 at a time: a unix socket's listen backlog refuses (EAGAIN) far more at once.
      unsigned.push(...(await Promise.all(Array.from({ length: 50 }, () => raw(socketPath, 'POST', '/challenge', { [CHALLENGE_HEADER]: newNonce() })))));
    }
    expect((await raw(socketPath, 'GET', '/status', { authorization })).status).toBe(200);
    expect(unsigned.every((answer) => answer.status === 200)).toBe(true);
  });

  it('still serves a gateway from before signed challenges (a rolling upgrade), in a table of their own', async () => {
    const gatewayNonce = newNonce();
    const challenge = await raw(socketPath, 'POST', '/challenge', { [CHALLENGE_HEADER]: gatewayNonce });
    expect(challenge.status).toBe(200);
    const authorization = gatewayAuthorization(keys, SESSION, challenge.body.nonce as string, gatewayNonce, 'GET', '/status');
    expect((await raw(socketPath, 'GET', '/status', { authorization })).status).toBe(200);
  });
});

describe('outstanding challenges', () => {
  it('are bounded (the oldest go first), single-use, and expire', () => {
    let now = 0;
    const challenges = createChallenges({ max: 3, ttlMs: 1000, now: () => now });
    const issued = Array.from({ length: 5 }, () => challenges.issue(newNonce()));
    expect(challenges.size).toBe(3);
    expect(challenges.take(issued[0]!)).toBeUndefined();
    expect(challenges.take(issued[4]!)).toMatch(/^[\w-]{43}$/);
    expect(challenges.take(issued[4]!)).toBeUndefined();
    now = 2000;
    expect(challenges.take(issued[3]!)).toBeUndefined();
  });
});

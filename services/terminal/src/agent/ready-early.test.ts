// The agent says it is ready as soon as it listens, before its shell is spawned (issue 35, session start): the
// gateway's next steps then run while the spawn (a fork of the agent) does. Checked on a real agent: `ready` comes
// before the shell's process exists, an attach sent at that moment gets the shell, and a shell that cannot run
// still fails the start, with its reason, before anything says ready.
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from './agent.ts';
import { authorizationFrom, newChallenge, openAgentStream, type AgentCredentials, type AgentStream } from './client.ts';
import { sessionKeys } from './handshake.ts';
import { parseAgentSettings } from './settings.ts';

const SESSION = '5d0c1f9a-2b7e-4c3d-8e6f-0a1b2c3d4e5f';

/** This process's child processes now. */
function children(): number[] {
  const pids: number[] = [];
  for (const task of readdirSync('/proc/self/task')) {
    try {
      pids.push(...readFileSync(`/proc/self/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
    } catch {
      // the thread ended
    }
  }
  return pids;
}

describe('agent start: ready before the shell is spawned', () => {
  const keys = sessionKeys('c2Vzc2lvbi1zZWNyZXQtb2YtdGhpcy10ZXN0LW9ubHky');
  const credentials: AgentCredentials = { sessionId: SESSION, keys };
  const dir = mkdtempSync(join(tmpdir(), 'ready-early-'));
  const agents: RunningAgent[] = [];
  const settings = (shell: string, challenge = newChallenge(credentials)) =>
    parseAgentSettings({
      BOXYARD_AGENT_SESSION_ID: SESSION,
      BOXYARD_AGENT_LISTEN: `unix:${join(dir, `${agents.length}-${shell.length}.sock`)}`,
      BOXYARD_AGENT_KEY: keys.agentKey,
      BOXYARD_AGENT_GATEWAY_KEY: keys.gatewayPublicKey,
      BOXYARD_AGENT_SHELL: shell,
      BOXYARD_AGENT_EXPIRES_AT: String(Date.now() + 600_000),
      BOXYARD_AGENT_CHALLENGE: challenge.nonce,
      BOXYARD_AGENT_CHALLENGE_SIGNATURE: challenge.signature,
    });

  afterAll(async () => {
    for (const agent of agents) agent.terminate('stopped');
    await Promise.all(agents.map((agent) => agent.done));
    rmSync(dir, { recursive: true, force: true });
  });

  it('says ready (with its answer) as it listens; the shell comes after, and an attach sent then gets it', async () => {
    const challenge = newChallenge(credentials);
    const before = children();
    let atReady: number[] | undefined;
    let attaching: Promise<AgentStream> | undefined;
    const agent = await startAgent(settings('/bin/sh', challenge), {
      log: () => {},
      ready: (address, answer) => {
        atReady = children();
        // What the gateway does on reading the ready line: attach with the answer, at once.
        attaching = openAgentStream(address, credentials, undefined, authorizationFrom(address, credentials, challenge.nonce, answer, 'GET', '/attach'));
      },
    });
    agents.push(agent);
    expect(atReady, 'ready was said').toBeDefined();
    const shells = children().filter((pid) => !before.includes(pid));
    expect(shells.length, 'the shell runs once the start is done').toBeGreaterThan(0);
    expect(
      atReady!.filter((pid) => shells.includes(pid)),
      'no shell yet when ready was said',
    ).toEqual([]);

    const stream = await attaching!;
    const output = await new Promise<number>((resolve, reject) => {
      // The prompt may have come with the upgrade's answer (the agent sends a small read at once): then no more comes.
      if (stream.head.length > 0) return resolve(stream.head.length);
      const timer = setTimeout(() => reject(new Error('no output within 10 s')), 10_000);
      stream.socket.on('data', (chunk: Buffer) => {
        clearTimeout(timer);
        resolve(chunk.length + stream.head.length);
      });
      stream.socket.resume();
    });
    expect(output).toBeGreaterThan(0);
    stream.socket.destroy();
  });

  it('fails the start with the reason, before saying ready, when the shell cannot run', async () => {
    let ready = false;
    await expect(startAgent(settings('/nonexistent/shell'), { log: () => {}, ready: () => (ready = true) })).rejects.toThrow(/does not exist/);
    expect(ready).toBe(false);
  });
});

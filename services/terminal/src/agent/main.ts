// Entry point of the agent process: `node services/terminal/src/agent/main.ts --session <id>` (local backend) or
// `boxyard terminal-agent` in a session pod (which calls runAgentFromEnvironment). Settings come from
// BOXYARD_AGENT_* variables, which are removed from the environment before the shell starts.
// `--warm <slot>` (local backend's warm agent, see backends/warm-agent.ts): the process starts with no session,
// loads its code, then waits for one JSON line on stdin holding the session's BOXYARD_AGENT_* (and TRACEPARENT)
// variables; it leaves quietly when stdin closes first (its gateway is gone or no longer wants it).
import { flushCompileCache } from 'node:module';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { WebSocketServer } from 'ws';
import { startAgent } from './agent.ts';
import { agentProof, challengeSignature, challengeSignedAt, newNonce, publicKeyFrom, sessionKeys, type ChallengeAnswer } from './handshake.ts';
import { currentAccount, lookupAccount } from './identity.ts';
import { traceAgentStart } from './tracing.ts';
import { parseAgentSettings } from './settings.ts';
// The one module, not the kit's index: that loads the whole kit (Fastify, pg, S3, ...) into every agent (~70 MiB).
import { ignoreError } from '@boxyard/kit/errors/ignore-error.ts';

export const READY_PREFIX = 'boxyard-agent ready ';

export const WARM_FLAG = '--warm';

/** `<nonce> <proof>`: the answer to the gateway's challenge that came with the settings, printed before the address. */
export const ANSWER_PREFIX = 'boxyard-agent answer ';

/** The session's variables, sent by the gateway once it claims this warm agent; undefined when stdin closes. */
async function claimedEnvironment(): Promise<Record<string, string> | undefined> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    lines.close();
    const parsed = JSON.parse(line) as unknown;
    if (!parsed || typeof parsed !== 'object') throw new Error('warm agent: the claim is not a JSON object');
    const allowed = ([name]: [string, unknown]) => name.startsWith('BOXYARD_AGENT_') || name === 'TRACEPARENT' || name === 'TRACESTATE';
    return Object.fromEntries(
      Object.entries(parsed)
        .filter(allowed)
        .map(([name, value]) => [name, String(value)]),
    );
  }
  return undefined;
}

/**
 * A waiting spare runs once what every start runs and no session decides: an account lookup, a WebSocket server, and
 * an HTTP server listening on a socket (an abstract one: no file, gone when closed). Their first run cost the
 * claimed agent ~13 ms in `listen` alone, before its `ready` (medians of 6 starts, 3 pairs at load 30-43:
 * 13.5 / 22.0 / 13.7 ms → 1.0 / 1.1 / 0.9 ms). A failure here only means the start does it the slow way.
 */
async function warmUp(): Promise<void> {
  try {
    lookupAccount(currentAccount().name);
    // The first Ed25519 key import and verification, and the first HMAC, cost a claimed agent ~1 ms each (OpenSSL
    // loads its decoders and algorithms on first use): once on made-up keys here, before any session.
    const keys = sessionKeys(newNonce());
    const nonce = newNonce();
    challengeSignedAt(publicKeyFrom(keys.gatewayPublicKey), 'warm-up', nonce, challengeSignature(keys, 'warm-up', nonce));
    agentProof(keys.agentKey, 'warm-up', nonce, nonce);
    new WebSocketServer({ noServer: true }).close();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(`\0boxyard-agent-warm-${process.pid}`, () => resolve());
    });
    await new Promise((resolve) => server.close(resolve));
  } catch (error) {
    process.stderr.write(`warm-up skipped: ${(error as Error).message}\n`);
  }
}

export async function runAgentFromEnvironment(): Promise<never> {
  // Everything imported above is loaded: write it to the compile cache now (when NODE_COMPILE_CACHE names one, see
  // backends/agent-runtime.ts), while this process may still write there; it drops to the shell's account later.
  flushCompileCache();
  if (process.argv.includes(WARM_FLAG)) {
    await warmUp();
    let claim;
    try {
      claim = await claimedEnvironment();
    } catch (error) {
      process.stderr.write(`${(error as Error).message}\n`);
      process.exit(2);
    }
    if (!claim) process.exit(0);
    process.stdin.destroy(); // nothing more comes, and the shell must not inherit a reader
    Object.assign(process.env, claim);
  }
  let settings;
  try {
    settings = parseAgentSettings(process.env);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(2);
  }
  // Traces go where the gateway's go (its OTEL_* settings came along); the shell sees none of them. Loaded only
  // then: an agent without tracing does not carry the SDK.
  const telemetry = Object.keys(process.env).some((name) => name.startsWith('OTEL_'))
    ? (await import('@boxyard/kit/telemetry/telemetry.ts')).startTelemetry('boxyard-terminal-agent')
    : undefined;
  const traceEnv = { TRACEPARENT: process.env.TRACEPARENT, TRACESTATE: process.env.TRACESTATE };
  for (const name of Object.keys(process.env))
    if (name.startsWith('BOXYARD_') || name.startsWith('OTEL_') || name === 'TRACEPARENT' || name === 'TRACESTATE') delete process.env[name];
  const log = (message: string) => process.stderr.write(`${new Date().toISOString()} agent ${settings.BOXYARD_AGENT_SESSION_ID}: ${message}\n`);
  let agent;
  try {
    // Ready (and the answer to the gateway's challenge) is printed as soon as the agent listens (agent.ts says why).
    const ready = (address: string, answer: ChallengeAnswer | undefined) =>
      process.stdout.write(`${answer ? `${ANSWER_PREFIX}${answer.nonce} ${answer.proof}\n` : ''}${READY_PREFIX}${address}\n`);
    agent = await traceAgentStart(traceEnv, () => startAgent(settings, { log, ready }));
  } catch (error) {
    log(`cannot start: ${(error as Error).message}`);
    process.exit(1);
  }
  // Pod deletion (SIGTERM) or the host shutting down: end the shell properly, telling attached sockets why.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => agent.terminate('stopped'));
  const code = await agent.done;
  await telemetry?.shutdown().catch(ignoreError('the last spans are best effort when the agent exits'));
  process.exit(code);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runAgentFromEnvironment();

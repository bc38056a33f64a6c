// Entry point of the agent process: `node services/terminal/src/agent/main.ts --session <id>` (local backend) or
// `boxyard terminal-agent` in a session pod (which calls runAgentFromEnvironment). Settings come from
// BOXYARD_AGENT_* variables, which are removed from the environment before the shell starts.
import { pathToFileURL } from 'node:url';
import { startAgent } from './agent.ts';
import { traceAgentStart } from './tracing.ts';
import { parseAgentSettings } from './settings.ts';

export const READY_PREFIX = 'boxyard-agent ready ';

export async function runAgentFromEnvironment(): Promise<never> {
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
  for (const name of Object.keys(process.env)) if (name.startsWith('BOXYARD_') || name.startsWith('OTEL_') || name === 'TRACEPARENT' || name === 'TRACESTATE') delete process.env[name];
  const log = (message: string) => process.stderr.write(`${new Date().toISOString()} agent ${settings.BOXYARD_AGENT_SESSION_ID}: ${message}\n`);
  let agent;
  try {
    agent = await traceAgentStart(traceEnv, () => startAgent(settings, { log }));
  } catch (error) {
    log(`cannot start: ${(error as Error).message}`);
    process.exit(1);
  }
  // Pod deletion (SIGTERM) or the host shutting down: end the shell properly, telling attached sockets why.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => agent.terminate('stopped'));
  process.stdout.write(`${READY_PREFIX}${agent.address}\n`);
  const code = await agent.done;
  await telemetry?.shutdown().catch(() => {}); // the last spans, before the process goes
  process.exit(code);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runAgentFromEnvironment();

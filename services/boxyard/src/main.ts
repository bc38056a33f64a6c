#!/usr/bin/env node
// The `boxyard` command. `terminal-agent` (the command of a terminal session pod) loads the agent's modules alone:
// every session pod runs one, and the rest of the command (cli.ts: every service, the kit, Fastify, pg, S3 clients)
// would cost each of them ~70 MiB more for nothing (services/terminal/src/agent/footprint.test.ts).
const argv = process.argv.slice(2);
if (argv[0] === 'terminal-agent' && argv.length === 1) {
  const { runAgentFromEnvironment } = await import('@boxyard/terminal/agent/main.ts');
  await runAgentFromEnvironment();
} else {
  const { cli, exitWith } = await import('./cli.ts');
  await cli(argv).catch(exitWith);
}

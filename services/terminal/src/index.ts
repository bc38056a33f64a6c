// The terminal service: `boxyard serve terminal` and `boxyard dev` start it through serviceDefinition.
export { serviceDefinition, startTerminal, TERMINAL_VERSION, type TerminalService } from './service.ts';
export { terminalConfigSchema, DEFAULT_PORT, type TerminalConfig } from './config.ts';
/** For a `boxyard terminal-agent` subcommand: the agent in a session pod. */
export { runAgentFromEnvironment } from './agent/main.ts';
